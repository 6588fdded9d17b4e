// Package canon accepts JSON under the strict rules of the ZEO runtime host
// protocol and produces its RFC 8785 (JSON Canonicalization Scheme) bytes
// and "sha256:" digests, byte for byte as the Python host does (see
// doc/protocol.md, “Strict JSON”, “Canonical JSON” and “Digests”).
//
// Start with [Unmarshal] (strict JSON into a Go value), [Marshal] or
// [Canonicalize] (RFC 8785 bytes) and [DigestOf] or [DigestJSON] (the
// "sha256:" [Digest] every party binds).
//
// # Acceptance
//
// Input must be RFC 8259 JSON as Python's json module parses it, and
// additionally:
//
//   - valid UTF-8 with no byte order mark ([ErrInvalidUTF8], [ErrSyntax]);
//   - no trailing data after the value, only JSON whitespace ([ErrSyntax]);
//   - no duplicate object key at any depth ([ErrDuplicateKey]);
//   - no NaN, Infinity, or float literal that overflows ([ErrNonFinite]);
//   - no \u escape naming a lone surrogate ([ErrLoneSurrogate]);
//   - integers are decided by token shape: a number with no '.', 'e' or 'E'
//     is an integer and must lie within ±(2^53−1) ([ErrUnsafeInteger]), so
//     1e20 is accepted and 100000000000000000000 is refused;
//   - at most [Options.MaxBytes] bytes ([ErrTooLarge], 1 MiB by default) and
//     [Options.MaxDepth] levels of nesting ([ErrTooDeep], 512 by default,
//     never more than [DepthLimit]).
//
// Any top-level value is accepted, scalars included. Every refusal is an
// [*Error] that wraps one sentinel and carries the byte offset.
//
// # Output
//
// Canonical bytes follow RFC 8785: object members sorted by the UTF-16 code
// units of their keys, no whitespace, strings escaping only '"', '\\' and
// U+0000..U+001F (short escapes where JSON has them, lowercase \u00xx
// otherwise, everything else raw UTF-8), integers in decimal with -0 as 0,
// and floats in the ECMAScript Number.prototype.toString form ([AppendFloat]).
//
// A float literal is read exactly, whatever its number of digits and
// however far its exponent: its float64 is the nearest to its decimal
// value, ties to even, as Python's float() reads it. One that underflows
// (1e-400) becomes zero and is written 0, as upstream's Python float does.
//
// A [Digest] is "sha256:" followed by the lowercase hex SHA-256 of
// canonical bytes: [Sum] for bytes already canonical, [DigestJSON] for JSON
// bytes, [DigestOf] for Go values. [CheckCanonical] verifies, without
// allocating, that bytes are strict JSON already in canonical form (a
// refusal that is only about form wraps [ErrNotCanonical]), so that a
// receiver can hash what it received with [Sum].
//
// # Go values
//
// [Marshal] writes canonical bytes of Go values and [Unmarshal] decodes
// strictly into them: exact json tag names, unknown members refused,
// required fields enforced and no type coercion. [Parse] returns a [Value]
// tree for callers that need to inspect a document and decode or hash it
// without parsing it twice.
//
// # Caveats
//
// Canonical bytes are for hashing and sending; they do not always parse
// back under the same rules. A float of magnitude in [2^53, 1e21) with no
// fraction is written as plain digits (the float literal 1e20 becomes
// 100000000000000000000, exactly as the Python host writes it), and those
// digits read back as an integer literal outside ±(2^53−1), which
// [ErrUnsafeInteger] refuses. Keep such values as a [Value] or a Go float,
// not as canonical bytes (json.RawMessage), when they must be written
// again.
//
// # Concurrency
//
// Every function and method of this package may be called from several
// goroutines at once; the package has no mutable state.
package canon
