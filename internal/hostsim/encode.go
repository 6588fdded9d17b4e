package hostsim

import (
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ipc"
)

// appendEffect appends the canonical bytes of e, as e.AppendCanonical
// does, writing the arguments straight into dst instead of through a
// separate canon.Marshal buffer.
func appendEffect(dst []byte, e ipc.EffectRequest) ([]byte, error) {
	var err error
	dst = append(dst, `{"arguments":`...)
	if dst, err = appendArguments(dst, e.Arguments); err != nil {
		return dst, err
	}
	for _, kv := range [...]struct{ k, v string }{
		{`,"connection_ref":`, e.ConnectionRef}, {`,"connector_revision":`, string(e.ConnectorRevision)},
		{`,"logical_effect_id":`, e.LogicalEffectID}, {`,"operation":`, e.Operation},
	} {
		dst = append(dst, kv.k...)
		if dst, err = canon.AppendString(dst, kv.v); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendArguments appends the canonical bytes of m (nil is {}). Values of
// the kinds JSON decoding produces are written in place; on anything else,
// or on any error, the whole map goes through canon.Marshal so that the
// bytes and the error are exactly canon's.
func appendArguments(dst []byte, m map[string]any) ([]byte, error) {
	if out, ok := appendValue(dst, m); ok {
		return out, nil
	}
	b, err := canon.Marshal(m)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// appendValue appends v's canonical bytes and reports false for a kind it
// does not handle or a value canon would refuse.
func appendValue(dst []byte, v any) ([]byte, bool) {
	var err error
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		if v {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case string:
		dst, err = canon.AppendString(dst, v)
		return dst, err == nil
	case float64:
		dst, err = canon.AppendFloat(dst, v)
		return dst, err == nil
	case []any:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendValue(dst, e); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, compareUTF16)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = canon.AppendString(dst, k); err != nil {
				return dst, false
			}
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendValue(dst, v[k]); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	}
	return dst, false
}

// compareUTF16 orders keys by their UTF-16 code units, as RFC 8785
// requires. UTF-8 byte order is code point order, which differs only
// where a supplementary character meets one in U+E000–U+FFFF, so the
// conversion is needed only when both keys leave ASCII.
func compareUTF16(a, b string) int {
	if isASCII(a) || isASCII(b) {
		return strings.Compare(a, b)
	}
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
