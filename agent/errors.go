package agent

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Errors of the facade's own checks. A capability id the scope cannot see
// is answered with the catalogue's error for an unknown id
// (catalogue.ErrUnknownCapability), whose text depends on nothing but the
// id given.
var (
	// ErrInvalidConfig is returned by New; the message lists every problem.
	ErrInvalidConfig = errors.New("agent: invalid config")
	// ErrInvalidCall is returned for a malformed call: a query, limit,
	// operation id or arguments the facade cannot take. The message says
	// which and what is allowed. Nothing was run. (Arguments the
	// capability's request schema refuses are an outcome instead:
	// supervise.ErrInvalidRequest.)
	ErrInvalidCall = errors.New("agent: invalid call")
	// ErrInvalidCursor is returned for a cursor that did not come from the
	// same search (same scope and query), or is damaged. Start the search
	// again without a cursor.
	ErrInvalidCursor = errors.New("agent: invalid cursor")
)

// errBadCursor is the one answer for every unusable cursor.
var errBadCursor = fmt.Errorf("%w: it does not continue this search (a cursor is bound to its scope and query); search again without one", ErrInvalidCursor)

func invalidf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidCall, fmt.Sprintf(format, a...))
}

// validText reports whether s is valid UTF-8 with no NUL.
func validText(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return false
		}
	}
	return utf8.ValidString(s)
}
