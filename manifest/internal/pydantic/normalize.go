package pydantic

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/zeoruntime/runtimeipc/manifest/internal/jsonval"
)

// Request normalization: what pydantic's model_validate (lax mode, Python
// input) followed by model_dump(mode="json") does to arguments that have
// already passed the JSON Schema, reconstructed from the schema pydantic
// published (model_json_schema). The schema is compiled once into a tree
// of pyNodes, one per pydantic validator it stands for; the walker then
// rewrites each value as that validator and its serializer would, or
// refuses it where pydantic refuses. See doc/pydantic.md for the table of
// schema markers, pydantic's rules and the cases the schema cannot tell.

// pyKind names the pydantic validator a schema node stands for.
type pyKind uint8

const (
	kindAny      pyKind = iota // {} or a schema this package does not map: the value is kept
	kindModel                  // "properties": a model, TypedDict or dataclass
	kindDict                   // "type": "object" without "properties"
	kindList                   // "type": "array" with "items"
	kindTuple                  // "prefixItems"
	kindSet                    // "uniqueItems": true (set, frozenset)
	kindUnion                  // "anyOf" (and "oneOf" without a discriminator): smart union
	kindTagged                 // "oneOf" with "discriminator": discriminated union
	kindAllOf                  // "allOf": every branch in turn
	kindEnum                   // "enum" or "const": Enum, Literal
	kindInt                    // "type": "integer"
	kindFloat                  // "type": "number"
	kindBool                   // "type": "boolean"
	kindStr                    // "type": "string" without a format pydantic gives meaning
	kindNull                   // "type": "null"
	kindDateTime               // "format": "date-time"
	kindDate                   // "format": "date"
	kindTime                   // "format": "time"
	kindDuration               // "format": "duration" (timedelta)
	kindUUID                   // "format": "uuid", "uuid1".."uuid8"
	kindURL                    // "format": "uri" (AnyUrl, HttpUrl, ...)
	kindIPv4                   // "format": "ipv4"
	kindIPv6                   // "format": "ipv6"
	kindIPAny                  // "format": "ipvanyaddress"
	kindIPv4Net                // "format": "ipv4network"
	kindIPv6Net                // "format": "ipv6network"
	kindIPAnyNet               // "format": "ipvanynetwork"
	kindIPv4If                 // "format": "ipv4interface"
	kindIPv6If                 // "format": "ipv6interface"
	kindIPAnyIf                // "format": "ipvanyinterface"
	kindDecimal                // anyOf number | string with pydantic's decimal pattern
	kindSecret                 // "format": "password" with "writeOnly" (SecretStr)
	kindPath                   // "format": "path" (pathlib.Path)
)

// extraMode is a model's handling of keys it does not declare.
type extraMode uint8

const (
	extraIgnore extraMode = iota // no "additionalProperties": dropped
	extraForbid                  // "additionalProperties": false
	extraAllow                   // "additionalProperties": true or a schema: kept
)

// pyNode is one compiled schema node. Nodes reached through the same
// "$ref" are shared, so recursive models make cycles.
type pyNode struct {
	kind pyKind

	fields map[string]*pyField // kindModel
	names  []string            // kindModel: the field names, sorted (a stable first refusal)
	extra  extraMode           // kindModel
	elem   *pyNode             // kindDict values, kindList/kindSet items, kindModel extras, kindTuple rest
	prefix []*pyNode           // kindTuple

	branches []*pyNode          // kindUnion, kindAllOf, kindTagged (in order)
	tagKey   string             // kindTagged: the discriminator property
	tags     map[string]*pyNode // kindTagged: tag value to branch

	values  []any // kindEnum
	version int   // kindUUID: the required version, 0 for any
}

// pyField is a declared model field.
type pyField struct {
	node     *pyNode
	def      any
	hasDef   bool
	required bool
}

// anyNode is the shared node for "keep the value".
var anyNode = &pyNode{kind: kindAny}

// planBuilder compiles a schema document into pyNodes.
type planBuilder struct {
	root map[string]any
	refs map[string]*pyNode
}

// buildPlan compiles the plan of a schema document.
func buildPlan(doc any) *pyNode {
	root, _ := doc.(map[string]any)
	b := planBuilder{root: root, refs: map[string]*pyNode{}}
	return b.node(doc)
}

// node compiles one schema (anything that is not an object is "any").
func (b *planBuilder) node(schema any) *pyNode {
	s, ok := schema.(map[string]any)
	if !ok {
		return anyNode
	}
	if ref, ok := s["$ref"].(string); ok {
		return b.ref(ref)
	}
	n := &pyNode{}
	b.fill(n, s)
	return n
}

// ref compiles the target of a local reference once; a chain of
// references shares one node.
func (b *planBuilder) ref(ref string) *pyNode {
	var chain []string
	for range maxRefChain {
		if n, ok := b.refs[ref]; ok {
			for _, r := range chain {
				b.refs[r] = n
			}
			return n
		}
		chain = append(chain, ref)
		target, ok := jsonval.Lookup(b.root, ref).(map[string]any)
		if !ok {
			break
		}
		if next, ok := target["$ref"].(string); ok {
			ref = next
			continue
		}
		n := &pyNode{}
		for _, r := range chain {
			b.refs[r] = n
		}
		b.fill(n, target)
		return n
	}
	for _, r := range chain {
		b.refs[r] = anyNode
	}
	return anyNode
}

// decimalPatternPrefix starts every pattern pydantic writes for the string
// branch of a Decimal.
const decimalPatternPrefix = `^(?!^[-+.]*$)[+-]?0*`

// fill sets n from the schema object s (which has no "$ref").
func (b *planBuilder) fill(n *pyNode, s map[string]any) {
	if all, ok := s["allOf"].([]any); ok && len(all) > 0 {
		if len(all) == 1 && len(s) == 1 {
			*n = *b.node(all[0])
			return
		}
		n.kind = kindAllOf
		for _, sub := range all {
			n.branches = append(n.branches, b.node(sub))
		}
		if rest := withoutKey(s, "allOf"); len(rest) > 0 {
			extra := &pyNode{}
			b.fill(extra, rest)
			n.branches = append(n.branches, extra)
		}
		return
	}
	if one, ok := s["oneOf"].([]any); ok && len(one) > 0 {
		n.kind = kindUnion
		for _, sub := range one {
			n.branches = append(n.branches, b.node(sub))
		}
		if d, ok := s["discriminator"].(map[string]any); ok {
			if key, ok := d["propertyName"].(string); ok {
				n.kind = kindTagged
				n.tagKey = key
				n.tags = map[string]*pyNode{}
				if mapping, ok := d["mapping"].(map[string]any); ok {
					for tag, ref := range mapping {
						if r, ok := ref.(string); ok {
							n.tags[tag] = b.ref(r)
						}
					}
				}
			}
		}
		return
	}
	if anyOf, ok := s["anyOf"].([]any); ok && len(anyOf) > 0 {
		if isDecimalAnyOf(anyOf) {
			n.kind = kindDecimal
			return
		}
		n.kind = kindUnion
		for _, sub := range anyOf {
			n.branches = append(n.branches, b.node(sub))
		}
		return
	}
	if c, ok := s["const"]; ok {
		n.kind = kindEnum
		n.values = []any{c}
		return
	}
	if e, ok := s["enum"].([]any); ok {
		n.kind = kindEnum
		n.values = e
		return
	}
	typ, _ := s["type"].(string)
	_, hasProps := s["properties"]
	switch {
	case typ == "object" || (typ == "" && hasProps):
		b.fillObject(n, s, hasProps)
	case typ == "array":
		if prefix, ok := s["prefixItems"].([]any); ok {
			n.kind = kindTuple
			for _, p := range prefix {
				n.prefix = append(n.prefix, b.node(p))
			}
			if items, ok := s["items"].(map[string]any); ok {
				n.elem = b.node(items)
			}
			return
		}
		n.kind = kindList
		if u, _ := s["uniqueItems"].(bool); u {
			n.kind = kindSet
		}
		n.elem = anyNode
		if items, ok := s["items"].(map[string]any); ok {
			n.elem = b.node(items)
		}
	case typ == "string":
		n.kind = stringKind(s, n)
	case typ == "integer":
		n.kind = kindInt
	case typ == "number":
		n.kind = kindFloat
	case typ == "boolean":
		n.kind = kindBool
	case typ == "null":
		n.kind = kindNull
	default:
		n.kind = kindAny
	}
}

func (b *planBuilder) fillObject(n *pyNode, s map[string]any, hasProps bool) {
	ap, hasAP := s["additionalProperties"]
	if !hasProps {
		n.kind = kindDict
		n.elem = anyNode
		if m, ok := ap.(map[string]any); ok {
			n.elem = b.node(m)
		}
		return
	}
	n.kind = kindModel
	props, _ := s["properties"].(map[string]any)
	n.fields = make(map[string]*pyField, len(props))
	for name, ps := range props {
		f := &pyField{node: b.node(ps)}
		if m, ok := ps.(map[string]any); ok {
			f.def, f.hasDef = m["default"]
		}
		n.fields[name] = f
	}
	n.names = slices.Sorted(maps.Keys(n.fields))
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			if name, ok := r.(string); ok && n.fields[name] != nil {
				n.fields[name].required = true
			}
		}
	}
	switch x := ap.(type) {
	case bool:
		n.extra = extraAllow
		if !x {
			n.extra = extraForbid
		}
		n.elem = anyNode
	case map[string]any:
		n.extra = extraAllow
		n.elem = b.node(x)
	default:
		if hasAP {
			n.extra = extraAllow
			n.elem = anyNode
		}
	}
}

// stringKind maps a string schema's "format" to pydantic's type.
func stringKind(s map[string]any, n *pyNode) pyKind {
	format, _ := s["format"].(string)
	switch format {
	case "date-time":
		return kindDateTime
	case "date":
		return kindDate
	case "time":
		return kindTime
	case "duration":
		return kindDuration
	case "uuid":
		return kindUUID
	case "uuid1", "uuid3", "uuid4", "uuid5", "uuid6", "uuid7", "uuid8":
		n.version = int(format[4] - '0')
		return kindUUID
	case "uri":
		return kindURL
	case "ipv4":
		return kindIPv4
	case "ipv6":
		return kindIPv6
	case "ipvanyaddress":
		return kindIPAny
	case "ipv4network":
		return kindIPv4Net
	case "ipv6network":
		return kindIPv6Net
	case "ipvanynetwork":
		return kindIPAnyNet
	case "ipv4interface":
		return kindIPv4If
	case "ipv6interface":
		return kindIPv6If
	case "ipvanyinterface":
		return kindIPAnyIf
	case "password":
		if w, _ := s["writeOnly"].(bool); w {
			return kindSecret
		}
	case "path":
		return kindPath
	}
	return kindStr
}

// isDecimalAnyOf recognizes the schema pydantic writes for Decimal:
// anyOf [{"type": "number"}, {"type": "string", "pattern": ...}] with
// pydantic's decimal pattern (constraints only change the pattern's tail).
func isDecimalAnyOf(branches []any) bool {
	if len(branches) != 2 {
		return false
	}
	num, _ := branches[0].(map[string]any)
	str, _ := branches[1].(map[string]any)
	if num == nil || str == nil || num["type"] != "number" || str["type"] != "string" {
		return false
	}
	p, _ := str["pattern"].(string)
	return strings.HasPrefix(p, decimalPatternPrefix)
}

func withoutKey(s map[string]any, key string) map[string]any {
	out := make(map[string]any, len(s))
	for k, v := range s {
		if k != key && k != "title" && k != "description" && k != "default" && k != "examples" {
			out[k] = v
		}
	}
	return out
}

// exactness ranks how naturally a validator took its input, as pydantic's
// smart unions rank their members: a member that takes the value exactly
// wins at once; otherwise the best rank wins, the first on a tie.
type exactness uint8

const (
	lax exactness = iota
	strict
	exact
)

// normError is a refusal at a JSON pointer. fatal marks a value pydantic
// accepts but the host cannot hash (an integer beyond ±(2^53−1), a
// non-finite float): pydantic's own refusals elsewhere in the arguments
// are reported first, and in a union such a member still competes (with
// exactness ex) and, if it wins, makes the request fail.
type normError struct {
	ptr    string
	rule   string
	detail string
	fatal  bool
	abort  bool // the schema, not the value, is at fault: stop everything
	ex     exactness
	fields int // for a fatal refusal: the model fields given, as in result; -1 otherwise
}

// maxNormSteps bounds the schema nodes visited for one request, so that
// unions nested in unions (each member tried on the same value) cannot
// make the walk exponential.
const maxNormSteps = 4_000_000

// normalizer walks arguments along a plan.
type normalizer struct {
	path   []string // reference tokens of the value being normalized
	trial  int      // > 0 while a union member is tried: never modify input containers
	hops   int      // union, allOf and tagged steps taken on the current value without descending
	budget int
}

func (w *normalizer) pointer() string {
	var b strings.Builder
	for _, t := range w.path {
		b.WriteByte('/')
		b.WriteString(jsonval.EscapeToken(t))
	}
	return b.String()
}

// fail is a refusal at the current value. While a union member is only
// being tried the refusal carries its rule alone: it is discarded unless
// every member refuses, and then the union reports a refusal of its own,
// so the pointer and message are not worth building.
func (w *normalizer) fail(rule, format string, args ...any) *normError {
	if w.trial > 0 {
		return &normError{rule: rule}
	}
	return &normError{ptr: w.pointer(), rule: rule, detail: fmt.Sprintf(format, args...)}
}

// fatal is a value the host cannot hash; it is always reported in full.
func (w *normalizer) fatal(rule, format string, args ...any) *normError {
	return &normError{ptr: w.pointer(), rule: rule, detail: fmt.Sprintf(format, args...), fatal: true, fields: -1}
}

// child normalizes the value at reference token tok. A fatal refusal is
// kept in *deferred (the first one) and reported as skip, so that a
// refusal of pydantic's own elsewhere is still found.
func (w *normalizer) child(n *pyNode, v any, tok string, deferred **normError) (r result, skip bool, err *normError) {
	w.path = append(w.path, tok)
	hops := w.hops
	w.hops = 0
	r, err = w.norm(n, v)
	w.hops = hops
	w.path = w.path[:len(w.path)-1]
	if err != nil && err.fatal && !err.abort {
		*deferred = cmp.Or(*deferred, err)
		return r, true, nil
	}
	return r, false, err
}

// failAt is fail for the value at reference token tok.
func (w *normalizer) failAt(tok, rule, format string, args ...any) *normError {
	w.path = append(w.path, tok)
	defer func() { w.path = w.path[:len(w.path)-1] }()
	return w.fail(rule, format, args...)
}

// result is a normalized value, how exactly its validator took it, and,
// for a model validated from an object, how many of its fields were given
// (-1 otherwise): pydantic prefers the union member that sets most fields.
type result struct {
	v      any
	ex     exactness
	fields int
}

func ok(v any, ex exactness) (result, *normError) { return result{v: v, ex: ex, fields: -1}, nil }

// norm normalizes v along n.
func (w *normalizer) norm(n *pyNode, v any) (result, *normError) {
	w.budget--
	if w.budget < 0 {
		return result{}, &normError{ptr: w.pointer(), rule: "schema.steps", fatal: true, abort: true,
			detail: fmt.Sprintf("normalizing needs more than %d schema steps; the schema is too deeply composed", maxNormSteps)}
	}
	switch n.kind {
	case kindUnion, kindTagged, kindAllOf:
		// These apply other nodes to the same value: a schema that
		// composes them in a cycle would never descend.
		if w.hops >= maxRefChain {
			return result{}, &normError{ptr: w.pointer(), rule: "schema.steps", fatal: true, abort: true,
				detail: fmt.Sprintf("the schema composes anyOf, oneOf and allOf more than %d deep without describing a nested value", maxRefChain)}
		}
		w.hops++
		defer func() { w.hops-- }()
	}
	switch n.kind {
	case kindAny:
		// pydantic's Any ranks strict, not exact: in a union it yields to
		// a member that takes the value exactly.
		return ok(v, strict)
	case kindModel:
		return w.model(n, v)
	case kindDict:
		return w.dict(n, v)
	case kindList:
		return w.list(n, v)
	case kindTuple:
		return w.tuple(n, v)
	case kindSet:
		return w.set(n, v)
	case kindUnion:
		return w.union(n, v)
	case kindTagged:
		return w.tagged(n, v)
	case kindAllOf:
		r := result{v: v, ex: exact, fields: -1}
		for _, b := range n.branches {
			next, err := w.norm(b, r.v)
			if err != nil {
				return result{}, err
			}
			r.v, r.ex = next.v, min(r.ex, next.ex)
			if next.fields >= 0 {
				r.fields = next.fields
			}
		}
		return r, nil
	case kindEnum:
		return w.enum(n, v)
	}
	return w.scalar(n, v)
}

func (w *normalizer) model(n *pyNode, v any) (result, *normError) {
	in, isObj := v.(map[string]any)
	if !isObj {
		return result{}, w.fail("model_type", "expected an object, found %s", jsonKind(v))
	}
	out := in
	if w.trial > 0 {
		out = make(map[string]any, len(n.fields))
	}
	ex, set, unsafe := exact, 0, 0
	var deferred *normError
	for _, name := range n.names {
		f := n.fields[name]
		cur, present := in[name]
		if !present {
			// A field the schema neither defaults nor requires has a
			// default_factory: its value is pydantic's to invent, so the
			// field stays absent (see doc/pydantic.md). A required one is
			// refused by the JSON Schema check first, except in a union
			// member that is only being tried.
			if f.hasDef {
				out[name] = deepCopy(f.def)
			} else if f.required {
				return result{}, w.failAt(name, "missing", "field required")
			}
			continue
		}
		r, skip, err := w.child(f.node, cur, name, &deferred)
		if err != nil {
			return result{}, err
		}
		if skip {
			unsafe++
			continue
		}
		out[name] = r.v
		ex = min(ex, r.ex)
		set++
	}
	for name, cur := range in {
		if _, declared := n.fields[name]; declared {
			continue
		}
		switch n.extra {
		case extraIgnore:
			if w.trial == 0 {
				delete(out, name)
			}
		case extraForbid:
			return result{}, w.failAt(name, "extra_forbidden", "extra inputs are not permitted")
		case extraAllow:
			r, skip, err := w.child(n.elem, cur, name, &deferred)
			if err != nil {
				return result{}, err
			}
			if skip {
				continue
			}
			out[name] = r.v
			ex = min(ex, r.ex)
		}
	}
	if deferred != nil {
		// pydantic took the unhashable value like any other: in a union
		// this member competes with every field it was given.
		e := *deferred
		e.ex, e.fields = lax, set+unsafe
		return result{}, &e
	}
	return result{v: out, ex: min(ex, strict), fields: set}, nil
}

func (w *normalizer) dict(n *pyNode, v any) (result, *normError) {
	in, isObj := v.(map[string]any)
	if !isObj {
		return result{}, w.fail("dict_type", "expected an object, found %s", jsonKind(v))
	}
	if n.elem.kind == kindAny {
		if len(in) == 0 {
			return ok(in, exact)
		}
		return ok(in, strict)
	}
	out := in
	if w.trial > 0 {
		out = make(map[string]any, len(in))
	}
	ex := exact
	var deferred *normError
	for k, cur := range in {
		r, skip, err := w.child(n.elem, cur, k, &deferred)
		if err != nil {
			return result{}, w.firstDictRefusal(n, in, err)
		}
		if skip {
			continue
		}
		out[k] = r.v
		ex = min(ex, r.ex)
	}
	if deferred != nil {
		return result{}, w.firstDictRefusal(n, in, deferred)
	}
	return ok(out, ex)
}

// firstDictRefusal finds the refusal of the first key in sorted order, so
// that the error does not depend on map iteration; err is one refusal
// already found (values already rewritten in place normalize to
// themselves again).
func (w *normalizer) firstDictRefusal(n *pyNode, in map[string]any, err *normError) *normError {
	var deferred *normError
	for _, k := range slices.Sorted(maps.Keys(in)) {
		if _, _, e := w.child(n.elem, in[k], k, &deferred); e != nil {
			return e
		}
	}
	return cmp.Or(deferred, err)
}

// items normalizes the elements of an array along elem (or prefix[i]).
func (w *normalizer) items(prefix []*pyNode, elem *pyNode, in []any) ([]any, exactness, *normError) {
	out := in
	if w.trial > 0 {
		out = make([]any, len(in))
	}
	ex := exact
	var deferred *normError
	for i, cur := range in {
		sub := elem
		if i < len(prefix) {
			sub = prefix[i]
		}
		if sub == nil {
			return nil, lax, w.fail("too_long", "tuple should have at most %d items", len(prefix))
		}
		r, skip, err := w.child(sub, cur, itoa(i), &deferred)
		if err != nil {
			return nil, lax, err
		}
		if skip {
			continue
		}
		out[i] = r.v
		ex = min(ex, r.ex)
	}
	if deferred != nil {
		return nil, lax, deferred
	}
	return out, ex, nil
}

func (w *normalizer) list(n *pyNode, v any) (result, *normError) {
	in, isArr := v.([]any)
	if !isArr {
		return result{}, w.fail("list_type", "expected an array, found %s", jsonKind(v))
	}
	out, ex, err := w.items(nil, n.elem, in)
	if err != nil {
		return result{}, err
	}
	return ok(out, ex)
}

func (w *normalizer) tuple(n *pyNode, v any) (result, *normError) {
	in, isArr := v.([]any)
	if !isArr {
		return result{}, w.fail("tuple_type", "expected an array, found %s", jsonKind(v))
	}
	if len(in) < len(n.prefix) {
		return result{}, w.fail("too_short", "tuple should have %d items, found %d", len(n.prefix), len(in))
	}
	out, ex, err := w.items(n.prefix, n.elem, in)
	if err != nil {
		return result{}, err
	}
	// An array is a tuple only in lax mode.
	return ok(out, min(ex, lax))
}

func (w *normalizer) set(n *pyNode, v any) (result, *normError) {
	in, isArr := v.([]any)
	if !isArr {
		return result{}, w.fail("set_type", "expected an array, found %s", jsonKind(v))
	}
	out, _, err := w.items(nil, n.elem, in)
	if err != nil {
		return result{}, err
	}
	elems, err := w.pySet(n.elem, out)
	if err != nil {
		return result{}, err
	}
	return ok(elems, lax)
}

// union is pydantic's smart union: every member is tried in lax mode on
// the value; the first that takes it exactly wins, otherwise the one that
// sets most model fields, then the best exactness, then the first.
func (w *normalizer) union(n *pyNode, v any) (result, *normError) {
	if len(n.branches) == 1 {
		return w.norm(n.branches[0], v)
	}
	var best result
	var bestErr *normError // the winner is a value the host cannot hash
	found := false
	var refusals []string
	w.trial++
	for _, b := range n.branches {
		r, err := w.norm(b, v)
		if err != nil && err.abort {
			w.trial--
			return result{}, err
		}
		if err != nil && !err.fatal {
			refusals = append(refusals, err.rule)
			continue
		}
		if err != nil {
			r = result{ex: err.ex, fields: err.fields}
		} else if r.ex == exact && r.fields < 0 {
			w.trial--
			return r, nil
		}
		better := !found
		if found {
			if best.fields >= 0 && r.fields >= 0 && best.fields != r.fields {
				better = best.fields < r.fields
			} else {
				better = best.ex < r.ex
			}
		}
		if better {
			best, bestErr, found = r, err, true
		}
	}
	w.trial--
	if found {
		if bestErr != nil {
			return result{}, bestErr
		}
		best.fields = -1
		return best, nil
	}
	return result{}, w.fail("union", "no member of the union takes the value (the members refuse it with %s)", strings.Join(refusals, ", "))
}

// tagged is a discriminated union: the discriminator's value names the
// member, which alone validates the object.
func (w *normalizer) tagged(n *pyNode, v any) (result, *normError) {
	in, isObj := v.(map[string]any)
	if !isObj {
		return result{}, w.fail("model_attributes_type", "expected an object, found %s", jsonKind(v))
	}
	tagVal, present := in[n.tagKey]
	if !present {
		return result{}, w.fail("union_tag_not_found", "the discriminator %q is missing", n.tagKey)
	}
	tag, isStr := tagVal.(string)
	b := n.tags[tag]
	if !isStr || b == nil {
		b = nil
		for _, br := range n.branches {
			if f := taggedField(br, n.tagKey); f != nil && f.node.kind == kindEnum && enumIndex(f.node.values, tagVal) >= 0 {
				b = br
				break
			}
		}
	}
	if b == nil {
		return result{}, w.fail("union_tag_invalid", "the discriminator %q has no member for %s", n.tagKey, jsonval.Describe(tagVal))
	}
	r, err := w.norm(b, v)
	if err != nil {
		return result{}, err
	}
	r.fields = -1
	return r, nil
}

func taggedField(n *pyNode, key string) *pyField {
	if n.kind != kindModel {
		return nil
	}
	return n.fields[key]
}

func (w *normalizer) enum(n *pyNode, v any) (result, *normError) {
	i := enumIndex(n.values, v)
	if i < 0 {
		return result{}, w.fail("enum", "%s is not one of the permitted values", jsonval.Describe(v))
	}
	ex := lax
	if sameJSONKind(n.values[i], v) {
		ex = exact
	}
	return ok(deepCopy(n.values[i]), ex)
}

// enumIndex finds v among an enum's values with Python's equality for
// JSON values (1 == 1.0; a bool equals only a bool, as the JSON Schema
// check has already required).
func enumIndex(values []any, v any) int {
	for i, e := range values {
		if jsonEqual(e, v) {
			return i
		}
	}
	return -1
}

// jsonEqual is equality of plain JSON values with numbers compared by
// value.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case int64, float64:
		fa, ok1 := jsonval.Number(x)
		fb, ok2 := jsonval.Number(b)
		if !ok1 || !ok2 {
			return false
		}
		if ia, isInt := x.(int64); isInt {
			if ib, isInt := b.(int64); isInt {
				return ia == ib
			}
		}
		return fa == fb
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			f, present := y[k]
			if !present || !jsonEqual(e, f) {
				return false
			}
		}
		return true
	}
	return false
}

func sameJSONKind(a, b any) bool { return jsonKind(a) == jsonKind(b) }

// jsonKind names the JSON type of a plain value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case int64, int:
		return "an integer"
	case float64:
		return "a float"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("Go %T", v)
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return fmt.Sprint(i)
}

// normalizeArguments normalizes args (in place where it can) along plan
// and materializes declared defaults. It reports the refusal, if any.
func normalizeArguments(plan *pyNode, args map[string]any, budget int) (map[string]any, *normError) {
	w := normalizer{budget: budget}
	r, err := w.norm(plan, args)
	if err != nil {
		return nil, err
	}
	out, isObj := r.v.(map[string]any)
	if !isObj {
		return nil, &normError{rule: "type", detail: "arguments must normalize to a JSON object, found " + jsonKind(r.v)}
	}
	return out, nil
}
