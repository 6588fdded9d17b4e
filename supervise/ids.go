package supervise

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// newID returns prefix + "-" + 32 random hex digits (128 bits).
func newID(prefix string) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("supervise: random id: %w", err)
	}
	return prefix + "-" + hex.EncodeToString(b[:]), nil
}
