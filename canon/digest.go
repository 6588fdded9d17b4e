package canon

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// DigestPrefix starts every [Digest].
const DigestPrefix = "sha256:"

// Digest is a protocol digest: "sha256:" followed by 64 lowercase hex digits
// of the SHA-256 of canonical bytes. The zero value is not a valid digest.
type Digest string

// Sum returns the digest of bytes that are already canonical. It does not
// check that they are; use [DigestJSON] for bytes of unknown form.
func Sum(canonical []byte) Digest {
	h := sha256.Sum256(canonical)
	var buf [len(DigestPrefix) + 2*sha256.Size]byte
	copy(buf[:], DigestPrefix)
	hex.Encode(buf[len(DigestPrefix):], h[:])
	return Digest(buf[:])
}

// String returns d unchanged.
func (d Digest) String() string { return string(d) }

// Validate reports whether d has the exact form ^sha256:[0-9a-f]{64}$ (no
// trailing newline, unlike some regex dialects allow).
func (d Digest) Validate() error {
	s := string(d)
	if len(s) != len(DigestPrefix)+64 || s[:len(DigestPrefix)] != DigestPrefix {
		return fmt.Errorf("canon: digest %q: want %q followed by 64 lowercase hex digits", truncate(s), DigestPrefix)
	}
	for i := len(DigestPrefix); i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("canon: digest %q: byte %d is %q, want a lowercase hex digit", truncate(s), i, c)
		}
	}
	return nil
}

// truncate shortens s for error messages so that hostile input cannot make
// errors arbitrarily large.
func truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
