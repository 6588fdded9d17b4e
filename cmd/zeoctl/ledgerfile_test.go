package main

import "testing"

// TestCutQueryParam: the ledger's schema leaves a PostgreSQL DSN's query
// and every other parameter reaches the driver byte for byte (an escaped
// space stays %20: the driver does not read "+" as one).
func TestCutQueryParam(t *testing.T) {
	for _, tt := range []struct {
		raw, value, rest string
		fails            bool
	}{
		{raw: "", value: "", rest: ""},
		{raw: "sslmode=disable", value: "", rest: "sslmode=disable"},
		{raw: "sslmode=disable&options=-c%20synchronous_commit%3Doff&ledger_schema=zeo_a",
			value: "zeo_a", rest: "sslmode=disable&options=-c%20synchronous_commit%3Doff"},
		{raw: "ledger_schema=first&x=1&ledger%5Fschema=second", value: "first", rest: "x=1"},
		{raw: "ledger_schema=a%20b&&y", value: "a b", rest: "y"},
		{raw: "ledger_schema=%zz", fails: true},
		{raw: "%zz=1", fails: true},
	} {
		value, rest, err := cutQueryParam(tt.raw, schemaParam)
		if tt.fails {
			if err == nil {
				t.Errorf("%q: no error, want one", tt.raw)
			}
			continue
		}
		if err != nil || value != tt.value || rest != tt.rest {
			t.Errorf("%q: %q, %q, %v; want %q, %q", tt.raw, value, rest, err, tt.value, tt.rest)
		}
	}
}
