package manifest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/manifest/internal/jsonval"
	"github.com/zeoruntime/runtimeipc/manifest/internal/pydantic"
)

// DefaultMaxSchemas is the number of compiled schemas a zero Validator
// keeps.
const DefaultMaxSchemas = 1024

// Validator validates provider bindings and prepares requests, compiling
// each distinct JSON Schema once and caching it by its digest (the
// "sha256:" digest of its canonical JSON). The zero value is ready to use
// with DefaultMaxSchemas; NewValidator sets another bound. A Validator is
// safe for concurrent use by several goroutines.
type Validator struct {
	maxSchemas int // fixed by NewValidator; 0 means DefaultMaxSchemas

	mu    sync.RWMutex // guards cache
	cache map[canon.Digest]*compiledSchema
}

// NewValidator returns a Validator whose cache holds at most maxSchemas
// compiled schemas; when it is full an arbitrary entry is evicted. Zero
// means DefaultMaxSchemas, and a negative value disables caching (every
// schema is compiled on every use). The bound cannot change afterwards.
func NewValidator(maxSchemas int) *Validator {
	return &Validator{maxSchemas: maxSchemas}
}

// compiledSchema is a cache entry: the compiled schema and its plain JSON
// document (read-only; used to find declared defaults).
type compiledSchema struct {
	sch *jsonschema.Schema
	doc any

	planOnce sync.Once
	plan     *pydantic.Plan // built on first use by normPlan()
}

// normPlan returns the schema's normalization plan, built once.
func (s *compiledSchema) normPlan() *pydantic.Plan {
	s.planOnce.Do(func() { s.plan = pydantic.Compile(s.doc) })
	return s.plan
}

// denyLoader is the compiler's only URL loader: it refuses everything, so a
// reference that escapes the schema document can never read a file or the
// network. (The metaschemas are bundled in the library and never loaded.)
type denyLoader struct{}

func (denyLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("manifest: loading %q refused: only local references (#...) are allowed", url)
}

const draft2020URI = "https://json-schema.org/draft/2020-12/schema"

// compiled returns the compiled form of a schema given as a Go JSON value.
// rule errors carry ptr (the schema's pointer) and capID.
func (v *Validator) compiled(schema map[string]any, capID, ptr string) (*compiledSchema, error) {
	canonical, err := canonicalOf(schema)
	if err != nil {
		return nil, &ValidationError{Err: ErrInvalidSchema, CapabilityID: capID, Pointer: ptr, Rule: "schema.json", Detail: "schema has no canonical JSON form", Cause: err}
	}
	digest := canon.Sum(canonical)
	v.mu.RLock()
	s := v.cache[digest]
	v.mu.RUnlock()
	if s != nil {
		return s, nil
	}
	// Compile from a plain copy (int64/float64/string/...) whatever Go
	// types the caller used. Not from the canonical bytes: they write an
	// integral float of 2^53 or more as digits, which parse back as an
	// unsafe integer.
	doc, err := plainJSON(schema)
	if err != nil {
		return nil, &ValidationError{Err: ErrInvalidSchema, CapabilityID: capID, Pointer: ptr, Rule: "schema.json", Detail: "schema has no canonical JSON form", Cause: err}
	}
	if err := checkSchemaKeys(doc, capID, ptr); err != nil {
		return nil, err
	}
	if s, err = compileDoc(doc, digest, capID, ptr); err != nil {
		return nil, err
	}
	v.store(digest, s)
	return s, nil
}

// compileDoc compiles a plain JSON schema document as draft 2020-12 under
// a synthetic hierarchical URL (in the reserved .invalid domain, so that it
// can never name a real host), with the deny-all loader. A hierarchical base
// makes relative references resolve normally, to URLs the loader refuses.
func compileDoc(doc any, digest canon.Digest, capID, ptr string) (*compiledSchema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(denyLoader{})
	c.UseRegexpEngine(pyRegexp)
	url := "https://schema.zeo.invalid/sha256/" + strings.TrimPrefix(string(digest), canon.DigestPrefix) + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, &ValidationError{Err: ErrInvalidSchema, CapabilityID: capID, Pointer: ptr, Rule: "schema.compile", Detail: err.Error(), Cause: err}
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, schemaError(err, capID, ptr)
	}
	pythonMultipleOf(sch, doc)
	return &compiledSchema{sch: sch, doc: doc}, nil
}

func (v *Validator) store(d canon.Digest, s *compiledSchema) {
	limit := v.maxSchemas
	if limit == 0 {
		limit = DefaultMaxSchemas
	}
	if limit < 0 {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.cache == nil {
		v.cache = make(map[canon.Digest]*compiledSchema)
	}
	if len(v.cache) >= limit {
		for k := range v.cache {
			delete(v.cache, k)
			break
		}
	}
	v.cache[d] = s
}

// Len returns the number of compiled schemas currently cached.
func (v *Validator) Len() int {
	v.mu.RLock()
	defer v.mu.RUnlock()
	return len(v.cache)
}

// checkSchemaKeys applies upstream's reference rule (every key named $ref
// or $dynamicRef, anywhere, is a string starting with '#') and this
// package's $schema rule (a string $schema anywhere must name draft
// 2020-12).
func checkSchemaKeys(doc any, capID, ptr string) error { return checkKeys(doc, capID, ptr, false) }

// dataKeywords hold JSON data, not subschemas: a "$schema" member inside
// them is a value like any other. ("$ref" is refused everywhere, as the
// host refuses it.)
var dataKeywords = map[string]bool{"default": true, "const": true, "enum": true, "examples": true}

func checkKeys(doc any, capID, ptr string, inData bool) error {
	switch x := doc.(type) {
	case map[string]any:
		// Sorted, so that the first of several problems is always the same.
		for _, k := range slices.Sorted(maps.Keys(x)) {
			val := x[k]
			p := ptrKey(ptr, k)
			switch k {
			case "$ref", "$dynamicRef":
				s, ok := val.(string)
				if !ok || !strings.HasPrefix(s, "#") {
					return &ValidationError{Err: ErrExternalReference, CapabilityID: capID, Pointer: p, Rule: "schema.local_ref",
						Detail: fmt.Sprintf("%s must be a string starting with '#', found %s", k, jsonval.Describe(val))}
				}
			case "$schema":
				if s, ok := val.(string); ok && !inData && strings.TrimSuffix(s, "#") != draft2020URI {
					return &ValidationError{Err: ErrInvalidSchema, CapabilityID: capID, Pointer: p, Rule: "schema.dialect",
						Detail: fmt.Sprintf("$schema %q is not draft 2020-12 (%s)", jsonval.Truncate(s, 80), draft2020URI)}
				}
			}
			if err := checkKeys(val, capID, p, inData || dataKeywords[k]); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			if err := checkKeys(e, capID, ptrIndex(ptr, i), inData); err != nil {
				return err
			}
		}
	}
	return nil
}

// schemaError converts a compile error into a *ValidationError.
func schemaError(err error, capID, ptr string) error {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		p, detail := ptr, sve.Error()
		var ve *jsonschema.ValidationError
		if errors.As(sve.Err, &ve) {
			loc, msg := leaf(ve)
			p, detail = ptr+loc, msg
		}
		return &ValidationError{Err: ErrInvalidSchema, CapabilityID: capID, Pointer: p, Rule: "schema.metaschema",
			Detail: "not valid against the draft 2020-12 metaschema: " + detail, Cause: err}
	}
	var lue *jsonschema.LoadURLError
	if errors.As(err, &lue) {
		return &ValidationError{Err: ErrExternalReference, CapabilityID: capID, Pointer: ptr, Rule: "schema.local_ref",
			Detail: "reference leaves the schema document: " + lue.URL, Cause: err}
	}
	return &ValidationError{Err: ErrInvalidSchema, CapabilityID: capID, Pointer: ptr, Rule: "schema.compile", Detail: err.Error(), Cause: err}
}

// leaf returns the JSON pointer and message of the first most specific
// cause of a validation error.
func leaf(ve *jsonschema.ValidationError) (string, string) {
	ve = leafError(ve)
	var b strings.Builder
	for _, tok := range ve.InstanceLocation {
		b.WriteByte('/')
		b.WriteString(jsonval.EscapeToken(tok))
	}
	msg := ve.Error()
	// The library prefixes messages with "jsonschema validation failed
	// with ..."; keep the part after the last location marker.
	if i := strings.LastIndex(msg, ": "); i >= 0 && !strings.Contains(msg[i:], "\n") {
		msg = msg[i+2:]
	}
	return b.String(), strings.TrimSpace(msg)
}

func leafError(ve *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	return ve
}

// keyword returns the schema keyword of the most specific cause ("type",
// "required", "pattern", ...), or "".
func keyword(ve *jsonschema.ValidationError) string {
	if k := leafError(ve).ErrorKind; k != nil {
		if kp := k.KeywordPath(); len(kp) > 0 {
			return kp[len(kp)-1]
		}
	}
	return ""
}

// validateInstance validates a plain JSON value (as produced by canon)
// against a compiled schema.
func validateInstance(s *compiledSchema, inst any, sentinel error, capID, ptr, rule string) error {
	err := s.sch.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		loc, msg := leaf(ve)
		if kw := keyword(ve); kw != "" {
			rule += ":" + kw
		}
		return &ValidationError{Err: sentinel, CapabilityID: capID, Pointer: ptr + loc, Rule: rule, Detail: msg, Cause: err}
	}
	return &ValidationError{Err: sentinel, CapabilityID: capID, Pointer: ptr, Rule: rule, Detail: err.Error(), Cause: err}
}
