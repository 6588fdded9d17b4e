package canon

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// Kind is the JSON type of a [Value]. Numbers are split by token shape, as
// the protocol decides integers: a literal without '.', 'e' or 'E' is an
// Integer, any other number a Float.
type Kind uint8

// The kinds of [Value].
const (
	Null Kind = iota
	Bool
	Integer
	Float
	String
	Array
	Object
)

var kindNames = [...]string{"null", "boolean", "integer", "float", "string", "array", "object"}

// String returns the JSON name of k ("null", "boolean", "integer",
// "float", "string", "array", "object").
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is a parsed JSON value that has passed every strict rule. Only the
// field for its Kind is set. Object members keep their input order; the
// canonical order is applied by [Value.AppendCanonical]. Values returned by
// [Parse] share nothing with the input bytes. A Value may be read from
// several goroutines at once; changing it while others read is a data race.
type Value struct {
	Kind    Kind
	Bool    bool     // Bool
	Int     int64    // Integer, always within ±(2^53−1)
	Float   float64  // Float, always finite
	Str     string   // String, valid UTF-8 with no lone surrogate
	Elems   []Value  // Array
	Members []Member // Object, in input order, keys unique
	Offset  int      // byte offset of the value in the parsed input
}

// Member is one member of an object [Value].
type Member struct {
	Key   string
	Value Value
}

// Get returns the member named key of an object value.
func (v *Value) Get(key string) (*Value, bool) {
	for i := range v.Members {
		if v.Members[i].Key == key {
			return &v.Members[i].Value, true
		}
	}
	return nil, false
}

// Parse checks that in is strict JSON and returns it as a [Value], using
// the default limits.
func Parse(in []byte) (Value, error) { return Options{}.Parse(in) }

// Parse is like the package-level [Parse] with o's limits.
func (o Options) Parse(in []byte) (Value, error) {
	s, err := o.start(in)
	if err != nil {
		return Value{}, err
	}
	p := parser{scanner: s}
	v, err := p.value(0)
	if err != nil {
		return Value{}, err
	}
	if err := p.finish(); err != nil {
		return Value{}, err
	}
	return v, nil
}

type parser struct {
	scanner
	buf []byte
}

func (p *parser) value(depth int) (Value, error) {
	off := p.pos
	if p.pos >= len(p.in) {
		return Value{}, errAt(ErrSyntax, p.pos, "unexpected end of input: want a value")
	}
	switch ch := p.in[p.pos]; ch {
	case '{':
		return p.object(depth + 1)
	case '[':
		return p.array(depth + 1)
	case '"':
		s, err := p.text()
		return Value{Kind: String, Str: s, Offset: off}, err
	case 't':
		return Value{Kind: Bool, Bool: true, Offset: off}, p.literal("true")
	case 'f':
		return Value{Kind: Bool, Offset: off}, p.literal("false")
	case 'n':
		return Value{Kind: Null, Offset: off}, p.literal("null")
	default:
		start, end, isInt, err := p.number()
		if err != nil {
			if ch != '-' && !isDigit(ch) && err.(*Error).Err == ErrSyntax {
				return Value{}, errAt(ErrSyntax, p.pos, "want a value, found %s", p.describe(p.pos))
			}
			return Value{}, err
		}
		tok := p.in[start:end]
		if isInt {
			if !safeIntegerToken(tok) {
				_, err := appendNumber(nil, tok, true, start)
				return Value{}, err
			}
			n, _ := strconv.ParseInt(string(tok), 10, 64)
			return Value{Kind: Integer, Int: n, Offset: off}, nil
		}
		f, err := floatValue(tok, start)
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: Float, Float: f, Offset: off}, nil
	}
}

// text scans a string token and returns its decoded text.
func (p *parser) text() (string, error) {
	start, end, escaped, err := p.str()
	if err != nil {
		return "", err
	}
	if !escaped {
		return string(p.in[start:end]), nil
	}
	p.buf = unescape(p.buf[:0], p.in[start:end])
	return string(p.buf), nil
}

func (p *parser) array(depth int) (Value, error) {
	v := Value{Kind: Array, Offset: p.pos}
	if err := p.enter(depth); err != nil {
		return Value{}, err
	}
	p.pos++
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		v.Elems = []Value{}
		return v, nil
	}
	for {
		e, err := p.value(depth)
		if err != nil {
			return Value{}, err
		}
		v.Elems = append(v.Elems, e)
		more, err := p.next(']')
		if err != nil {
			return Value{}, err
		}
		if !more {
			return v, nil
		}
	}
}

func (p *parser) object(depth int) (Value, error) {
	v := Value{Kind: Object, Offset: p.pos}
	if err := p.enter(depth); err != nil {
		return Value{}, err
	}
	p.pos++
	p.skipSpace()
	v.Members = []Member{}
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		return v, nil
	}
	var seen map[string]struct{}
	for {
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return Value{}, errAt(ErrSyntax, p.pos, "want a string key, found %s", p.describe(p.pos))
		}
		keyOff := p.pos
		key, err := p.text()
		if err != nil {
			return Value{}, err
		}
		// A linear scan beats a map for the small objects of the protocol.
		if len(v.Members) < 16 {
			for _, m := range v.Members {
				if m.Key == key {
					return Value{}, errAt(ErrDuplicateKey, keyOff, "key %q appears more than once in the object", truncate(key))
				}
			}
		} else {
			if seen == nil {
				seen = make(map[string]struct{}, 2*len(v.Members))
				for _, m := range v.Members {
					seen[m.Key] = struct{}{}
				}
			}
			if _, dup := seen[key]; dup {
				return Value{}, errAt(ErrDuplicateKey, keyOff, "key %q appears more than once in the object", truncate(key))
			}
			seen[key] = struct{}{}
		}
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return Value{}, errAt(ErrSyntax, p.pos, "want ':' after object key, found %s", p.describe(p.pos))
		}
		p.pos++
		p.skipSpace()
		e, err := p.value(depth)
		if err != nil {
			return Value{}, err
		}
		v.Members = append(v.Members, Member{Key: key, Value: e})
		more, err := p.next('}')
		if err != nil {
			return Value{}, err
		}
		if !more {
			return v, nil
		}
	}
}

// AppendCanonical appends the RFC 8785 bytes of v. It fails only for a
// Value built by hand that breaks the rules Parse enforces (an unsafe
// integer, a non-finite float, invalid UTF-8, a duplicate key).
func (v *Value) AppendCanonical(dst []byte) ([]byte, error) {
	return v.appendCanonical(dst, "", 0)
}

// Canonical returns the RFC 8785 bytes of v.
func (v *Value) Canonical() ([]byte, error) { return v.AppendCanonical(nil) }

// appendCanonical writes v, found at the JSON pointer ptr and depth levels
// below the value AppendCanonical was called on.
func (v *Value) appendCanonical(dst []byte, ptr string, depth int) ([]byte, error) {
	return v.appendAt(dst, &valuePath{base: ptr}, depth)
}

// valuePath is the JSON pointer of a value being written, as a chain to
// its parent; the text is built only for an error, so that writing a
// value nested d deep does not build pointers of length d at every level.
type valuePath struct {
	up      *valuePath // nil at the root, whose pointer is base
	base    string
	key     string // the member's key, unless isIndex
	index   int    // the element's index, when isIndex
	isIndex bool
}

func (p *valuePath) String() string {
	if p.up == nil {
		return p.base
	}
	if p.isIndex {
		return p.up.String() + "/" + strconv.Itoa(p.index)
	}
	return p.up.String() + "/" + escapePointer(p.key)
}

func (v *Value) appendAt(dst []byte, at *valuePath, depth int) ([]byte, error) {
	if depth > DepthLimit {
		return dst, errPath(ErrTooDeep, at.String(), "value nested deeper than %d levels (a cycle?)", DepthLimit)
	}
	switch v.Kind {
	case Null:
		return append(dst, "null"...), nil
	case Bool:
		return strconv.AppendBool(dst, v.Bool), nil
	case Integer:
		if v.Int > MaxSafeInteger || v.Int < -MaxSafeInteger {
			return dst, errPath(ErrUnsafeInteger, at.String(), "%d", v.Int)
		}
		return strconv.AppendInt(dst, v.Int, 10), nil
	case Float:
		out, err := AppendFloat(dst, v.Float)
		if err != nil {
			err.(*Error).Pointer = at.String()
		}
		return out, err
	case String:
		if !utf8.ValidString(v.Str) {
			return dst, checkText(v.Str, at.String())
		}
		return appendQuoted(dst, v.Str), nil
	case Array:
		dst = append(dst, '[')
		for i := range v.Elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = v.Elems[i].appendAt(dst, &valuePath{up: at, index: i, isIndex: true}, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case Object:
		order := make([]int, len(v.Members))
		for i := range order {
			order[i] = i
			if key := v.Members[i].Key; !utf8.ValidString(key) {
				return dst, checkText(key, at.String())
			}
		}
		slices.SortFunc(order, func(a, b int) int {
			return compareUTF16([]byte(v.Members[a].Key), []byte(v.Members[b].Key))
		})
		dst = append(dst, '{')
		for i, j := range order {
			m := &v.Members[j]
			if i > 0 {
				if v.Members[order[i-1]].Key == m.Key {
					return dst, errPath(ErrDuplicateKey, at.String(), "key %q appears more than once", truncate(m.Key))
				}
				dst = append(dst, ',')
			}
			dst = appendQuoted(dst, m.Key)
			dst = append(dst, ':')
			var err error
			if dst, err = m.Value.appendAt(dst, &valuePath{up: at, key: m.Key}, depth+1); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return dst, errPath(ErrUnsupportedType, at.String(), "value of unknown kind %d", v.Kind)
}

// escapePointer escapes one reference token of an RFC 6901 JSON pointer.
func escapePointer(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] == '~' || key[i] == '/' {
			b := make([]byte, 0, len(key)+4)
			for j := 0; j < len(key); j++ {
				switch key[j] {
				case '~':
					b = append(b, '~', '0')
				case '/':
					b = append(b, '~', '1')
				default:
					b = append(b, key[j])
				}
			}
			return string(b)
		}
	}
	return key
}
