package canon

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every refusal returned by this package is an [*Error]
// that wraps exactly one of them, so callers can test with [errors.Is].
var (
	// ErrSyntax: the input is not RFC 8259 JSON as Python's json module
	// accepts it (this includes empty input, a byte order mark, trailing
	// data and raw control characters inside strings).
	ErrSyntax = errors.New("invalid JSON syntax")
	// ErrDuplicateKey: an object names the same member twice, at any depth.
	ErrDuplicateKey = errors.New("duplicate object key")
	// ErrUnsafeInteger: an integer literal (no '.', 'e' or 'E') lies outside
	// ±(2^53−1), or a Go integer given to Marshal does.
	ErrUnsafeInteger = errors.New("integer outside ±(2^53-1)")
	// ErrLoneSurrogate: a \u escape names a UTF-16 surrogate that is not
	// part of a valid pair.
	ErrLoneSurrogate = errors.New("lone UTF-16 surrogate")
	// ErrInvalidUTF8: the bytes (or a Go string given to Marshal) are not
	// valid UTF-8.
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	// ErrNonFinite: NaN, Infinity, or a float literal that overflows float64.
	ErrNonFinite = errors.New("non-finite number")
	// ErrTooDeep: arrays and objects nest deeper than the depth limit.
	ErrTooDeep = errors.New("nesting too deep")
	// ErrTooLarge: the input is longer than the size limit.
	ErrTooLarge = errors.New("input too large")

	// ErrUnknownField: Unmarshal met an object member that the target
	// struct does not declare.
	ErrUnknownField = errors.New("unknown field")
	// ErrMissingField: Unmarshal found no member for a required struct field.
	ErrMissingField = errors.New("missing required field")
	// ErrType: a JSON value has the wrong type for its Go target (strict
	// typing: no string-to-number, float-to-int or bool coercions).
	ErrType = errors.New("wrong JSON type")
	// ErrUnsupportedType: Marshal or Unmarshal was given a Go type that has no
	// JSON form here (channels, functions, complex numbers, non-string map
	// keys).
	ErrUnsupportedType = errors.New("unsupported Go type")
)

// Error describes one refusal. Offset locates it in the input bytes for
// parsing errors (for [ErrTooLarge] it is the limit, the first byte past
// it); Pointer (an RFC 6901 JSON pointer) locates it in the document for
// decoding and encoding errors. Unmarshal's decoding errors carry both.
// Detail quotes at most 80 bytes of the input.
type Error struct {
	Err     error  // one of the package's sentinel errors
	Offset  int64  // byte offset into the input; -1 when not applicable
	Pointer string // JSON pointer of the offending value; "" is the root
	Detail  string // what exactly was found
}

// Error describes the refusal for a person: the sentinel's text, the byte
// offset and pointer, and the detail. The text may change between versions;
// test with [errors.Is] and [errors.As], never on the message.
func (e *Error) Error() string {
	where := ""
	if e.Offset >= 0 {
		where = fmt.Sprintf(" at byte offset %d", e.Offset)
	}
	if e.Pointer != "" {
		where += " (JSON pointer " + e.Pointer + ")"
	}
	if e.Detail == "" {
		return "canon: " + e.Err.Error() + where
	}
	return "canon: " + e.Err.Error() + where + ": " + e.Detail
}

// Unwrap returns the sentinel error.
func (e *Error) Unwrap() error { return e.Err }

func errAt(sentinel error, off int, format string, args ...any) *Error {
	return &Error{Err: sentinel, Offset: int64(off), Detail: fmt.Sprintf(format, args...)}
}

func errPath(sentinel error, ptr string, format string, args ...any) *Error {
	return &Error{Err: sentinel, Offset: -1, Pointer: ptr, Detail: fmt.Sprintf(format, args...)}
}
