package protocol_test

import (
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/internal/protocol"
)

func TestIdentifier(t *testing.T) {
	for _, tt := range []struct {
		name string
		s    string
		ok   bool
		want string // a word of the error's text
	}{
		{"one code point", "a", true, ""},
		{"empty", "", false, "empty"},
		{"256 ASCII", strings.Repeat("a", 256), true, ""},
		{"257 ASCII", strings.Repeat("a", 257), false, "257 code points"},
		// 256 four-byte code points are 1024 bytes: the limit counts code
		// points, not bytes.
		{"256 emoji", strings.Repeat("😀", 256), true, ""},
		{"257 emoji", strings.Repeat("😀", 257), false, "257 code points"},
		{"invalid UTF-8", "a\xffb", false, "UTF-8"},
		{"lone surrogate bytes", "\xed\xa0\x80", false, "UTF-8"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := protocol.ValidIdentifier(tt.s); got != tt.ok {
				t.Fatalf("ValidIdentifier = %v, want %v", got, tt.ok)
			}
			err := protocol.CheckIdentifier("field", tt.s)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckIdentifier = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && (!strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "field ")) {
				t.Fatalf("CheckIdentifier = %q, want it to say %q", err, tt.want)
			}
		})
	}
}
