package canon

import "unicode/utf8"

// checkText refuses strings that have no JSON form under the protocol:
// invalid UTF-8 (Go strings can hold any bytes, and a lone surrogate can
// only appear as an invalid encoding).
func checkText(s, ptr string) error {
	if utf8.ValidString(s) {
		return nil
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return errPath(ErrInvalidUTF8, ptr, "string byte %d is 0x%02x, which does not start a valid UTF-8 sequence", i, s[i])
		}
		i += size
	}
	return nil
}
