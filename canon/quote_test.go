package canon_test

import (
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
