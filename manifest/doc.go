// Package manifest implements the capability side of the ZEO runtime host
// protocol (see doc/protocol.md, “Capability manifest”, “Provider binding”,
// “Manifest projection” and “Static discovery”): capability manifests and
// the provider binding with upstream's exact JSON names, the host's
// inventory validation, the manifest projection and its digest,
// `capabilities list` pagination, JSON Schema (draft 2020-12) validation
// and request preparation (defaults and request digest).
//
// Start with [DecodeBinding]: it reads a provider binding (the JSON a
// provider's installer writes) strictly into the [ProviderBinding] that
// supervise.Config and catalogue admissions take, and [ValidateBinding]
// runs the host's discovery and activation checks on it. [Describe] finds
// one capability's [CapabilityManifest] among its capabilities;
// [PrepareRequest] applies the request schema's defaults and computes the
// request digest.
//
// # Decoding
//
// ProviderBinding decodes strictly, like upstream's wire model: unknown or
// missing keys, protocol_version other than the JSON integer 1, a
// generation that is not a JSON integer ≥ 1, and any type coercion are
// refused. CapabilityManifest and its sub-models decode laxly where the lax
// form is unambiguous, and are normalized: an id written as
// "ns.name@version" becomes the object form, set fields are de-duplicated
// (first occurrence kept, in input order; the projection sorts them anyway),
// and omitted defaults are materialized. Unknown keys are refused at every
// level. Both canon.Unmarshal and plain encoding/json decode with these
// rules; DecodeManifest and DecodeBinding do the same from bytes.
//
// One deliberate difference from upstream: pydantic's lax mode also coerces
// ambiguous scalars, for example "required": "true" (or 1, "yes") into a
// boolean. This package refuses every such coercion with a *ValidationError
// naming the field, so a Runtime never admits a manifest whose meaning
// depends on Python's coercion table. A number for a string field is
// refused, as upstream refuses it.
//
// Encoding (canon.Marshal, encoding/json) always writes the fully
// materialized form: all 13 manifest keys, nulls included, object-form ids,
// [] and {} for empty sets and maps. That is exactly the key set of
// pydantic's model_dump(mode="json"), so canon.Marshal of a decoded manifest
// hashes as upstream's dump does, except for the order of set fields, which
// upstream leaves to Python set iteration; only the projection, which sorts
// them, is ever hashed by the protocol.
//
// # Regular expressions
//
// Upstream runs its patterns in two dialects (doc/protocol.md,
// “Pattern dialects”). The CapabilityId validators use Python re.match: '$'
// also matches before a final "\n" (so the name "echo\n" is valid, as
// upstream accepts it) and '\d' is any Unicode decimal digit. Digest and
// factory run in Rust regex: '$' is the end of text and '\w' is Unicode-aware
// (letters, marks, decimal digits, connector punctuation, join controls),
// unlike Go's ASCII '\w'. This package emulates each dialect exactly; the
// Unicode tables are Go's, which may be a different Unicode version from the
// host's.
//
// # JSON Schema
//
// Schemas are compiled with github.com/santhosh-tekuri/jsonschema/v6 as
// draft 2020-12 and checked against its metaschema. Only local references
// resolve: every key named "$ref" or "$dynamicRef" anywhere in a schema must
// be a string starting with '#' (ErrExternalReference), and the compiler's
// loader refuses every URL, so validation never reads a file or the
// network. Formats are annotations, never assertions, as upstream. Compiled
// schemas are cached by schema digest in a [Validator].
//
// "pattern" and "patternProperties" run as upstream's Python re.search
// does: \d, \w and \s are Unicode-aware and '$' also matches before a final
// "\n" (the pattern is translated to RE2; see pyRegexp).
//
// "multipleOf" runs as in Python's jsonschema: with a float divisor the
// quotient is taken in floating point (3.8000000000000003 is a multiple
// of 0.1 there, 0.3 is not), not in the library's exact arithmetic.
//
// Known differences from upstream's Python jsonschema, each in the
// direction of refusing more: a pattern using what RE2 lacks (look-around,
// back-references) makes the schema invalid, except the look-aheads
// pydantic writes for Decimal fields, and a "$schema" other than the draft
// 2020-12 URI is refused (upstream always applies 2020-12).
//
// # Request preparation
//
// [Validator.PrepareRequest] (or a [Preparer], which skips the schema lookup)
// validates arguments and normalizes them as the host does before it
// hashes them (doc/design.md, “Request digest”): as pydantic's
// model_validate (lax) followed by model_dump(mode="json"), reconstructed
// from the published schema. Defaults are materialized; keys a model does
// not declare are dropped; dates, times and durations, UUIDs, URLs, IP
// addresses, networks and interfaces, Decimals, enums, integral floats,
// sets and unions are rewritten to pydantic's spelling; and whatever
// pydantic refuses is refused with the JSON pointer of the value.
// doc/pydantic.md tables each schema marker, pydantic's rule and this
// package's, and lists what the schema cannot tell (aliases, default
// factories, validators that rewrite values, the order of a set of
// strings, ...): for such capabilities callers pass arguments already
// normalized, which preparation leaves unchanged.
package manifest
