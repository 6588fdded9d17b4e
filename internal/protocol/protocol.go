// Package protocol holds the facts of the runtime host protocol that more
// than one package of the module checks, so that each is written once: the
// protocol version and the Identifier rule (see doc/protocol.md,
// “Identifiers”). The public faces are ipc.ProtocolVersion,
// ipc.MaxIdentifierRunes and ipc.ValidIdentifier; packages that cannot
// import ipc (manifest, ledger) use this one.
package protocol

import (
	"fmt"
	"unicode/utf8"
)

// Version is the only protocol_version of the runtime host protocol.
const Version = 1

// EffectDispositionConfirmed is the only effect_disposition an allowed
// effect reply may carry.
const EffectDispositionConfirmed = "confirmed"

// MaxIdentifierRunes is the longest Identifier, counted in Unicode code
// points (not bytes, not UTF-16 units). The shortest is one code point.
const MaxIdentifierRunes = 256

// ValidIdentifier reports whether s is an Identifier: valid UTF-8 of
// 1..MaxIdentifierRunes code points.
func ValidIdentifier(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	// MaxIdentifierRunes code points take at least as many bytes, so a
	// short string needs no count.
	return len(s) <= MaxIdentifierRunes || utf8.RuneCountInString(s) <= MaxIdentifierRunes
}

// CheckIdentifier returns nil when s is an Identifier and otherwise an
// error that names field and says what is wrong: empty, not valid UTF-8,
// or how many code points.
func CheckIdentifier(field, s string) error {
	switch {
	case ValidIdentifier(s):
		return nil
	case s == "":
		return fmt.Errorf("%s is empty; an identifier is 1..%d code points", field, MaxIdentifierRunes)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s is not valid UTF-8", field)
	}
	return fmt.Errorf("%s has %d code points; at most %d are allowed", field, utf8.RuneCountInString(s), MaxIdentifierRunes)
}
