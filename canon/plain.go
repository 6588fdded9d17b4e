package canon

import (
	"reflect"
	"strconv"
)

// AppendMarshal appends the canonical bytes of v to dst and returns the
// extended slice; it writes what Marshal returns and fails as Marshal
// does. Callers that assemble a message around a value (a frame header,
// an envelope) use it to write the value in place.
func AppendMarshal(dst []byte, v any) ([]byte, error) {
	if out, ok := appendPlain(dst, v, 0); ok {
		return out, nil
	}
	return appendValue(dst, reflect.ValueOf(v), "", 0, 0)
}

// appendPlain appends the canonical bytes of v when v is made only of the
// kinds JSON decoding produces (nil, bool, string, float64, int64, []any,
// map[string]any), without reflection. It reports false at any other kind
// or any value canon refuses; the caller then encodes v again through
// appendValue, which writes the same bytes or names the error, so the two
// paths never disagree. depth counts the arrays and objects around v: past
// DepthLimit (a cycle, maybe) it reports false too, and appendValue
// refuses v.
func appendPlain(dst []byte, v any, depth int) ([]byte, bool) {
	if depth > DepthLimit {
		return dst, false
	}
	var err error
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case bool:
		return strconv.AppendBool(dst, v), true
	case string:
		dst, err = AppendString(dst, v)
		return dst, err == nil
	case float64:
		dst, err = AppendFloat(dst, v)
		return dst, err == nil
	case int64:
		if v > MaxSafeInteger || v < -MaxSafeInteger {
			return dst, false
		}
		return strconv.AppendInt(dst, v, 10), true
	case []any:
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendPlain(dst, e, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sortKeys(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, err = AppendString(dst, k); err != nil {
				return dst, false
			}
			dst = append(dst, ':')
			var ok bool
			if dst, ok = appendPlain(dst, v[k], depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	}
	return dst, false
}
