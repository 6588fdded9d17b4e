package mcpserver

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/zeoruntime/runtimeipc/agent"
	"github.com/zeoruntime/runtimeipc/canon"
)

// compile compiles a tool's input schema with the module's JSON Schema
// library (draft 2020-12).
func compile(t testing.TB, name string, schema json.RawMessage) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(schema)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(name+".json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name + ".json")
	if err != nil {
		t.Fatalf("%s's input schema does not compile: %v", name, err)
	}
	return s
}

// argsFor returns a new value of the arguments type of tool name.
func argsFor(name string) any {
	switch name {
	case ToolSearch:
		return new(searchArgs)
	case ToolDescribe:
		return new(describeArgs)
	}
	return new(runArgs)
}

// decoderFor returns the decoding the tool's handler applies, and whether
// its shape checks (beyond the schema: limits the facade applies) refuse.
func decoderFor(name string) func(raw []byte) error {
	return func(raw []byte) error {
		v := argsFor(name)
		if err := decode(name, raw, v); err != nil {
			return err
		}
		// The facade refuses an empty capability id and an over-long query
		// itself; the handler's checks refuse the rest.
		switch a := v.(type) {
		case *searchArgs:
			if len(a.Query) > agent.MaxQueryBytes {
				return errors.New("query too long")
			}
			_, err := a.check()
			return err
		case *describeArgs:
			if a.CapabilityID == "" {
				return errors.New("empty")
			}
		case *runArgs:
			if a.CapabilityID == "" {
				return errors.New("empty")
			}
			_, err := a.check()
			return err
		}
		return nil
	}
}

// TestSchemasMatchDecoding checks, on a table of arguments per tool, that
// the published input schema and the handler's strict decoding agree on
// what is accepted: an agent that follows the schema is never refused for
// the shape of its arguments, and what the schema refuses is refused. (One
// leniency: null for operation_id or account reads as absent.)
func TestSchemasMatchDecoding(t *testing.T) {
	cases := map[string][]struct {
		args string
		ok   bool
	}{
		ToolSearch: {
			{`{}`, true},
			{`{"query":"mail send"}`, true},
			{`{"query":"mail","cursor":"AQ","limit":100}`, true},
			{`{"limit":1}`, true},
			{`{"limit":101}`, false},
			{`{"limit":0}`, false},
			{`{"limit":-1}`, false},
			{`{"limit":2.5}`, false},
			{`{"limit":"3"}`, false},
			{`{"query":7}`, false},
			{`{"query":null}`, false},
			{`{"capability_id":"x@1.0.0"}`, false},
			{`{"query":"` + strings.Repeat("a", agent.MaxQueryBytes+1) + `"}`, false},
		},
		ToolDescribe: {
			{`{"capability_id":"example.echo@1.0.0"}`, true},
			{`{"capability_id":""}`, false},
			{`{}`, false},
			{`{"capability_id":1}`, false},
			{`{"capability_id":"a","extra":true}`, false},
		},
		ToolRun: {
			{`{"capability_id":"example.echo@1.0.0"}`, true},
			{`{"capability_id":"e@1.0.0","arguments":{"text":"x","n":1,"f":1.5,"l":[1,{"a":null}]}}`, true},
			{`{"capability_id":"e@1.0.0","arguments":{},"operation_id":"op-1","account":"acct"}`, true},
			{`{"capability_id":"e@1.0.0","arguments":[]}`, false},
			{`{"capability_id":"e@1.0.0","arguments":"x"}`, false},
			{`{"capability_id":"e@1.0.0","operation_id":""}`, false},
			{`{"capability_id":"e@1.0.0","account":""}`, false},
			{`{"arguments":{}}`, false},
			{`{"capability_id":"e@1.0.0","args":{}}`, false},
		},
	}
	for _, tool := range Tools() {
		schema := compile(t, tool.Name, tool.InputSchema.(json.RawMessage))
		dec := decoderFor(tool.Name)
		if len(cases[tool.Name]) == 0 {
			t.Errorf("no cases for tool %s", tool.Name)
		}
		for _, c := range cases[tool.Name] {
			inst, err := jsonschema.UnmarshalJSON(strings.NewReader(c.args))
			if err != nil {
				t.Fatal(err)
			}
			schemaOK := schema.Validate(inst) == nil
			decErr := dec([]byte(c.args))
			if schemaOK != c.ok || (decErr == nil) != c.ok {
				t.Errorf("%s %s: schema accepts %v, decoder error %v; want accepted %v", tool.Name, c.args, schemaOK, decErr, c.ok)
			}
		}
	}
}

// TestDecodeStrict checks what the decoder refuses beyond the schema,
// because run's arguments are bound by their canonical digest: duplicate
// keys and integers outside ±(2^53−1) anywhere in the arguments.
func TestDecodeStrict(t *testing.T) {
	for _, raw := range []string{
		`{"capability_id":"e@1.0.0","capability_id":"f@1.0.0"}`,
		`{"capability_id":"e@1.0.0","arguments":{"a":1,"a":2}}`,
		`{"capability_id":"e@1.0.0","arguments":{"n":9007199254740993}}`,
		`{"capability_id":"e@1.0.0","arguments":{"n":NaN}}`,
		`{"capability_id":"e@1.0.0"} trailing`,
		"{\"capability_id\":\"e\xff@1.0.0\"}",
	} {
		var a runArgs
		if err := decode(ToolRun, []byte(raw), &a); !errors.Is(err, agent.ErrInvalidCall) {
			t.Errorf("decode(%q) = %v, want ErrInvalidCall", raw, err)
		}
	}
	var a runArgs
	if err := decode(ToolRun, []byte(`{"capability_id":"e@1.0.0","arguments":{"n":9007199254740991,"f":1e20}}`), &a); err != nil {
		t.Fatal(err)
	}
	if n, ok := a.Arguments["n"].(int64); !ok || n != 1<<53-1 {
		t.Errorf("integer argument decoded as %T %v, want int64", a.Arguments["n"], a.Arguments["n"])
	}
	if f, ok := a.Arguments["f"].(float64); !ok || f != 1e20 {
		t.Errorf("float argument decoded as %T %v, want float64", a.Arguments["f"], a.Arguments["f"])
	}
}

// FuzzDecodeArguments: tool arguments are untrusted bytes from an agent.
// Decoding never panics; what decodes is a refusal wrapping
// ErrInvalidCall or arguments whose canonical form decodes again to
// the same.
func FuzzDecodeArguments(f *testing.F) {
	for _, s := range []string{`{}`, `{"capability_id":"example.echo@1.0.0","arguments":{"text":"hi"}}`,
		`{"query":"mail","limit":3,"cursor":"AQ"}`, `{"capability_id":"a","operation_id":"op","account":"acct","arguments":{"x":[1,2.5,null,true]}}`,
		`null`, `[]`, `{"arguments":{"a":{"b":{"c":[]}}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, name := range []string{ToolSearch, ToolDescribe, ToolRun} {
			v := argsFor(name)
			if err := decode(name, raw, v); err != nil {
				if !errors.Is(err, agent.ErrInvalidCall) {
					t.Fatalf("%s: error %v does not wrap ErrInvalidCall", name, err)
				}
				continue
			}
			if r, ok := v.(*runArgs); ok {
				b, err := canon.Marshal(r.Arguments)
				if err != nil {
					continue // floats canon writes as digits it would not read back
				}
				var again map[string]any
				if err := canon.Unmarshal(b, &again); err != nil && r.Arguments != nil {
					t.Fatalf("canonical arguments %s do not decode again: %v", b, err)
				}
			}
		}
	})
}
