package canon_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
)

func TestAppendString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{"q\"b\\s/", `"q\"b\\s/"`},
		{"\b\t\n\f\r\x00\x1f\x7f", `"\b\t\n\f\r\u0000\u001f` + "\x7f\""},
		{"\u2028\U0001F600", "\"\u2028\U0001F600\""},
	} {
		got, err := canon.AppendString([]byte("x"), c.in)
		if err != nil || string(got) != "x"+c.want {
			t.Errorf("AppendString(%q) = %s, %v; want x%s", c.in, got, err, c.want)
		}
		back, err := canon.Unquote(got[1:])
		if err != nil || back != c.in {
			t.Errorf("Unquote(%s) = %q, %v; want %q", got[1:], back, err, c.in)
		}
	}
	if _, err := canon.AppendString(nil, "\xff"); !errors.Is(err, canon.ErrInvalidUTF8) {
		t.Errorf("AppendString(invalid UTF-8) error = %v, want ErrInvalidUTF8", err)
	}
}

func TestUnquote(t *testing.T) {
	for _, c := range []struct {
		in   string
		want string
		err  error
	}{
		{`"a\u0041\/\ud83d\ude00"`, "aA/\U0001F600", nil},
		{`"\ud800"`, "", canon.ErrLoneSurrogate},
		{`"a" `, "", canon.ErrSyntax},
		{`a`, "", canon.ErrSyntax},
		{``, "", canon.ErrSyntax},
		{`"unterminated`, "", canon.ErrSyntax},
		{"\"\xff\"", "", canon.ErrInvalidUTF8},
	} {
		got, err := canon.Unquote([]byte(c.in))
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("Unquote(%q) error = %v, want %v", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("Unquote(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// preformatted implements canon.Marshaler.
type preformatted struct{ raw string }

func (p preformatted) AppendCanonical(dst []byte) ([]byte, error) { return append(dst, p.raw...), nil }

// failing implements canon.Marshaler and refuses.
type failing struct{}

func (failing) AppendCanonical(dst []byte) ([]byte, error) {
	_, err := canon.AppendString(dst, "\xff")
	return dst, err
}

func TestMarshalerPreferred(t *testing.T) {
	// Plain digits of an integral float ≥ 2^53 are canonical output that the
	// strict parser would refuse; a Marshaler's bytes are taken as they are.
	got, err := canon.Marshal(map[string]any{"b": preformatted{"10000000000000000"}, "a": 1})
	if err != nil || string(got) != `{"a":1,"b":10000000000000000}` {
		t.Fatalf("Marshal = %s, %v", got, err)
	}
	if _, err := canon.Marshal([]any{failing{}}); !errors.Is(err, canon.ErrInvalidUTF8) {
		t.Errorf("a Marshaler's canon error: got %v, want ErrInvalidUTF8 kept", err)
	}
}

type embedA struct {
	X int `json:"x"`
	Y int `json:"y"`
}

type embedB struct {
	embedA
	X int `json:"x"` // shallower: hides embedA's x
}

type embedC struct{ Y int }

type embedD struct {
	embedA
	embedC     // Y (untagged, depth 1) against embedA's tagged y: different names
	Z      int `json:"z"`
}

type embedTie struct {
	embedA
	embedF
	embedG
}

type embedF struct{ W int }

type embedG struct{ W int } // same depth, both untagged: W is hidden

type selfEmbed struct {
	//lint:ignore U1000 the self-embedding is the case tested, never read
	*selfEmbed
	V int `json:"v"`
}

func TestEmbeddedFieldNames(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{embedB{embedA{1, 2}, 3}, `{"x":3,"y":2}`},
		{embedD{embedA{1, 2}, embedC{3}, 4}, `{"Y":3,"x":1,"y":2,"z":4}`},
		{embedTie{embedA{1, 2}, embedF{3}, embedG{4}}, `{"x":1,"y":2}`},
		{selfEmbed{V: 1}, `{"v":1}`},
	} {
		got, err := canon.Marshal(c.v)
		if err != nil || string(got) != c.want {
			t.Errorf("Marshal(%T) = %s, %v; want %s", c.v, got, err, c.want)
		}
		// What encoding/json writes, canon writes (up to key order).
		std, _ := json.Marshal(c.v)
		if cs, err := canon.Canonicalize(std); err != nil || string(cs) != c.want {
			t.Errorf("encoding/json writes %s for %T", std, c.v)
		}
	}
	var b embedB
	if err := canon.Unmarshal([]byte(`{"x":5,"y":6}`), &b); err != nil || b.X != 5 || b.Y != 6 || b.embedA.X != 0 {
		t.Errorf("Unmarshal into embedB = %+v, %v", b, err)
	}
}
