// Package pbvalue converts between the Go values of Request.Params and
// Response.Result and the Value messages of the gRPC protocol, with the rules
// both protocols share (see doc/capabilityruntime.md, “Values”): JSON-shaped
// values are taken as they are, any other Go value goes through
// encoding/json, numbers come back as float64, and what a JSON reader would
// get wrong (integers beyond ±(2^53−1), NaN, infinities, cycles) is refused
// before anything is sent.
package pbvalue

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"

	pb "github.com/zeoruntime/runtimeipc/capabilityruntime/capabilityruntimev1"
)

// ErrUnsupported is wrapped by every *Error.
var ErrUnsupported = errors.New("capabilityruntime: value cannot be sent")

// maxSafeInteger is 2^53−1, the largest integer every JSON reader holds
// exactly.
const maxSafeInteger = 1<<53 - 1

// maxDepth bounds nesting, so that a slice or map that contains itself is
// refused rather than followed forever (encoding/json stops at the same
// depth).
const maxDepth = 1000

// Error is a value that cannot be sent: where it is and why.
type Error struct {
	// Path locates the value, e.g. "params.items[2].size".
	Path string
	// Problem says what is wrong with it.
	Problem string
}

// Error implements error.
func (e *Error) Error() string {
	return "capabilityruntime: value cannot be sent: " + e.Path + ": " + e.Problem
}

// Unwrap returns ErrUnsupported.
func (e *Error) Unwrap() error { return ErrUnsupported }

// FromMap converts a params or result map; root names it in errors
// ("params", "result"). A nil map gives a nil map.
func FromMap(m map[string]any, root string) (map[string]*pb.Value, error) {
	out, err := fromMap(m, 0)
	if err != nil {
		return nil, prefix(err, root)
	}
	return out, nil
}

// Check reports whether FromMap would accept m, for the JSON protocol, which
// sends m through encoding/json itself.
func Check(m map[string]any, root string) error {
	_, err := FromMap(m, root)
	return err
}

// ToMap converts a received map back to Go values: nil, bool, float64,
// string, []any and map[string]any. A nil map gives a nil map.
func ToMap(m map[string]*pb.Value) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = toGo(v)
	}
	return out
}

func toGo(v *pb.Value) any {
	switch k := v.GetKind().(type) {
	case *pb.Value_NumberValue:
		return k.NumberValue
	case *pb.Value_StringValue:
		return k.StringValue
	case *pb.Value_BoolValue:
		return k.BoolValue
	case *pb.Value_ListValue:
		vs := k.ListValue.GetValues()
		out := make([]any, len(vs))
		for i, e := range vs {
			out[i] = toGo(e)
		}
		return out
	case *pb.Value_StructValue:
		out := ToMap(k.StructValue.GetFields())
		if out == nil {
			out = map[string]any{}
		}
		return out
	default: // null, or a kind this version does not know
		return nil
	}
}

// prefix puts name in front of the path of a *Error.
func prefix(err error, name string) error {
	var e *Error
	if errors.As(err, &e) {
		switch {
		case e.Path == "":
			e.Path = name
		case strings.HasPrefix(e.Path, "["):
			e.Path = name + e.Path
		default:
			e.Path = name + "." + e.Path
		}
	}
	return err
}

func fromMap(m map[string]any, depth int) (map[string]*pb.Value, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]*pb.Value, len(m))
	for k, v := range m {
		pv, err := fromGo(v, depth+1)
		if err != nil {
			return nil, prefix(err, k)
		}
		out[k] = pv
	}
	return out, nil
}

func number(f float64) (*pb.Value, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, &Error{Problem: "is " + strconv.FormatFloat(f, 'g', -1, 64) + ", which JSON cannot carry"}
	}
	return &pb.Value{Kind: &pb.Value_NumberValue{NumberValue: f}}, nil
}

func integer(i int64) (*pb.Value, error) {
	if i > maxSafeInteger || i < -maxSafeInteger {
		return nil, &Error{Problem: "integer " + strconv.FormatInt(i, 10) + " is beyond ±(2^53−1) and would not arrive exactly"}
	}
	return &pb.Value{Kind: &pb.Value_NumberValue{NumberValue: float64(i)}}, nil
}

func fromGo(v any, depth int) (*pb.Value, error) {
	if depth > maxDepth {
		return nil, &Error{Problem: "nests deeper than " + strconv.Itoa(maxDepth) + " levels (a value that contains itself?)"}
	}
	switch x := v.(type) {
	case nil:
		return &pb.Value{Kind: &pb.Value_NullValue{}}, nil
	case bool:
		return &pb.Value{Kind: &pb.Value_BoolValue{BoolValue: x}}, nil
	case string:
		return &pb.Value{Kind: &pb.Value_StringValue{StringValue: x}}, nil
	case float64:
		return number(x)
	case float32:
		return number(float64(x))
	case int:
		return integer(int64(x))
	case int8:
		return integer(int64(x))
	case int16:
		return integer(int64(x))
	case int32:
		return integer(int64(x))
	case int64:
		return integer(x)
	case uint8:
		return integer(int64(x))
	case uint16:
		return integer(int64(x))
	case uint32:
		return integer(int64(x))
	case uint, uint64, uintptr:
		u := reflect.ValueOf(x).Uint()
		if u > maxSafeInteger {
			return nil, &Error{Problem: "integer " + strconv.FormatUint(u, 10) + " is beyond 2^53−1 and would not arrive exactly"}
		}
		return integer(int64(u))
	case json.Number:
		return jsonNumber(x)
	case []any:
		if x == nil { // encoding/json writes null for a nil slice
			return &pb.Value{Kind: &pb.Value_NullValue{}}, nil
		}
		vs := make([]*pb.Value, len(x))
		for i, e := range x {
			pv, err := fromGo(e, depth+1)
			if err != nil {
				return nil, prefix(err, "["+strconv.Itoa(i)+"]")
			}
			vs[i] = pv
		}
		return &pb.Value{Kind: &pb.Value_ListValue{ListValue: &pb.ListValue{Values: vs}}}, nil
	case map[string]any:
		if x == nil {
			return &pb.Value{Kind: &pb.Value_NullValue{}}, nil
		}
		fields, err := fromMap(x, depth)
		if err != nil {
			return nil, err
		}
		return &pb.Value{Kind: &pb.Value_StructValue{StructValue: &pb.Struct{Fields: fields}}}, nil
	default:
		return viaJSON(v, depth)
	}
}

// jsonNumber decides by the token's shape, as the canonical JSON rules of
// this module do: no '.', 'e' or 'E' makes an integer, which must be safe.
func jsonNumber(n json.Number) (*pb.Value, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		i, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, &Error{Problem: "integer " + s + " is beyond ±(2^53−1) or not a number"}
		}
		return integer(i)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, &Error{Problem: strconv.Quote(s) + " is not a finite number"}
	}
	return number(f)
}

// viaJSON converts a Go value that is not JSON-shaped (a struct, []string,
// map[string]int, a json.Marshaler, a typed nil…) by encoding it with
// encoding/json and converting what a JSON reader gets back, so that both
// protocols send the same thing.
func viaJSON(v any, depth int) (*pb.Value, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &Error{Problem: "a " + reflect.TypeOf(v).String() + " that encoding/json refuses: " + err.Error()}
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var back any
	if err := dec.Decode(&back); err != nil {
		return nil, &Error{Problem: "a " + reflect.TypeOf(v).String() + " whose JSON does not decode: " + err.Error()}
	}
	return fromGo(back, depth)
}
