package port

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/zeoruntime/runtimeipc/canon"
)

// CheckDocument reports whether v, written as canonical JSON, is a value
// the host's strict parser accepts (see doc/protocol.md, “Canonical
// JSON”). what names the document in the error.
//
// Marshalling alone is not enough: canonical JSON writes a float of
// magnitude in [2^53, 1e21) without a fraction as plain digits (1e20 is
// written 100000000000000000000), and the host reads those digits as an
// integer literal outside ±(2^53−1) and refuses the whole document. In a
// reply that poisons a live session; in the request it fails the attempt
// after launch. CheckDocument refuses such a value, and anything else the
// host would refuse, with a *DocumentError naming its JSON pointer.
func CheckDocument(what string, v any) error {
	b, err := canon.Marshal(v)
	if err != nil {
		de := &DocumentError{Document: what, Detail: "cannot be written as canonical JSON", Err: err}
		var ce *canon.Error
		if errors.As(err, &ce) {
			de.Pointer, de.Err = ce.Pointer, ce.Err
			if ce.Detail != "" {
				de.Detail = ce.Detail
			}
		}
		return de
	}
	if err := canon.CheckCanonical(b); err != nil {
		de := &DocumentError{Document: what, Detail: "the host would refuse it", Err: err}
		var ce *canon.Error
		if errors.As(err, &ce) {
			de.Err = ce.Err
			if ce.Detail != "" {
				de.Detail = ce.Detail
			}
		}
		if ptr, f, ok := findUnsafeFloat(reflect.ValueOf(v), ""); ok {
			de.Pointer = ptr
			de.Err = canon.ErrUnsafeInteger
			de.Detail = "the float " + strconv.FormatFloat(f, 'g', -1, 64) +
				" is written as an integer literal outside ±(2^53−1), which the host refuses; send it as a string, or keep it below 2^53"
		}
		return de
	}
	return nil
}

// findUnsafeFloat returns the JSON pointer of the first float (in
// canonical member order) whose canonical form is an integer-shaped token
// outside the safe range.
func findUnsafeFloat(v reflect.Value, ptr string) (string, float64, bool) {
	for v.Kind() == reflect.Interface || v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "", 0, false
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if unsafeFloat(f) {
			return ptr, f, true
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return "", 0, false // []byte is a string
		}
		for i := range v.Len() {
			if p, f, ok := findUnsafeFloat(v.Index(i), ptr+"/"+strconv.Itoa(i)); ok {
				return p, f, true
			}
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return "", 0, false
		}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, f, ok := findUnsafeFloat(v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key())), ptr+"/"+escapePointer(k)); ok {
				return p, f, true
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			if p, f, ok := findUnsafeFloat(v.Field(i), ptr+"/"+escapePointer(name)); ok {
				return p, f, true
			}
		}
	}
	return "", 0, false
}

// unsafeFloat reports whether f's canonical token has no '.', 'e' or 'E'
// and lies outside ±(2^53−1).
func unsafeFloat(f float64) bool {
	if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) <= canon.MaxSafeInteger {
		return false
	}
	b, err := canon.AppendFloat(nil, f)
	return err == nil && !strings.ContainsAny(string(b), ".eE")
}

// escapePointer escapes a key for an RFC 6901 pointer.
func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// ErrDocument is wrapped by every *DocumentError: a value the host's
// strict parser would refuse, found before it was sent.
var ErrDocument = errors.New("supervise: document the host would refuse")

// DocumentError reports a value in an outgoing document that the host's
// strict parser would refuse: sending it would poison the session (a
// reply) or fail the attempt (the request, the context), so it is refused
// locally instead.
type DocumentError struct {
	// Document names the document: "arguments", "provider binding",
	// "effect result".
	Document string
	// Pointer is the RFC 6901 JSON pointer of the offending value.
	Pointer string
	// Detail says what is wrong and how to send it instead.
	Detail string
	// Err is the canon sentinel (canon.ErrUnsafeInteger, ...), if any.
	Err error
}

// Error describes the value and where it is.
func (e *DocumentError) Error() string {
	ptr := e.Pointer
	if ptr == "" {
		ptr = "(root)"
	}
	msg := fmt.Sprintf("supervise: %s at %s: %s", e.Document, ptr, e.Detail)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns ErrDocument and the canon sentinel.
func (e *DocumentError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrDocument}
	}
	return []error{ErrDocument, e.Err}
}
