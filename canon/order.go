package canon

import "unicode/utf8"

// compareUTF16 orders two valid UTF-8 strings by their UTF-16 code units,
// as RFC 8785 §3.2.3 sorts object keys. UTF-8 byte order equals code point
// order, which differs from UTF-16 order only when a supplementary
// character (encoded as surrogates, 0xD800..0xDFFF) meets one in
// U+E000..U+FFFF, so only the first differing rune needs a closer look.
func compareUTF16(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRune(a[i:])
	rb, _ := utf8.DecodeRune(b[i:])
	ua, ub := firstUnit(ra), firstUnit(rb)
	if ua != ub {
		return int(ua) - int(ub)
	}
	return int(ra) - int(rb)
}

// firstUnit returns the first UTF-16 code unit of r.
func firstUnit(r rune) rune {
	if r < 0x10000 {
		return r
	}
	return 0xD800 + (r-0x10000)>>10
}
