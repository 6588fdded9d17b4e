package canon

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// compareUTF16 orders two valid UTF-8 strings by their UTF-16 code units,
// as RFC 8785 §3.2.3 sorts object keys. UTF-8 byte order equals code point
// order, which differs from UTF-16 order in one case only: a supplementary
// character (UTF-16 surrogates 0xD800..0xDFFF, UTF-8 lead byte 0xF0..0xF4)
// meets one in U+E000..U+FFFF (lead byte 0xEE or 0xEF) at the first
// difference. The first differing byte decides: in valid UTF-8 a byte of
// 0xEE or more is always a lead byte, and when the first difference is a
// continuation byte both characters share their lead byte and so their
// UTF-16 class.
func compareUTF16(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+8 <= n {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			i += bits.TrailingZeros64(x) / 8
			return compareAt(a[i], b[i])
		}
		i += 8
	}
	for ; i < n; i++ {
		if a[i] != b[i] {
			return compareAt(a[i], b[i])
		}
	}
	return len(a) - len(b)
}

// sortKeys sorts object keys in RFC 8785 order.
func sortKeys(keys []string) {
	slices.SortFunc(keys, func(a, b string) int { return compareUTF16([]byte(a), []byte(b)) })
}

// compareAt orders two different bytes found at the first difference of
// two UTF-8 strings by the UTF-16 order of the characters they start.
func compareAt(x, y byte) int {
	if x >= 0xEE && y >= 0xEE && (x >= 0xF0) != (y >= 0xF0) {
		if x >= 0xF0 {
			return -1 // x starts a supplementary character: surrogates sort first
		}
		return 1
	}
	return int(x) - int(y)
}
