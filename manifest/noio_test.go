package manifest_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/zeoruntime/runtimeipc/manifest"
)

// TestNoExternalRead proves that no schema reference ever reaches a file or
// the network: a real TCP listener serving a valid schema and a real file
// holding one are referenced in every way a schema can name a resource;
// each schema is refused and the listener sees no connection. The file
// holds a valid schema, so a successful read would have made compilation
// succeed.
func TestNoExternalRead(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			fmt.Fprint(c, "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"type\":\"string\"}")
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	dir := t.TempDir()
	file := filepath.Join(dir, "s.json")
	if err := os.WriteFile(file, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	httpURL := "http://" + ln.Addr().String() + "/s.json"
	fileURL := "file://" + file
	schemas := map[string]map[string]any{
		"http $ref":             {"$ref": httpURL},
		"file $ref":             {"$ref": fileURL},
		"etc passwd":            {"$ref": "file:///etc/passwd"},
		"plain path $ref":       {"$ref": file},
		"nested http $ref":      {"properties": map[string]any{"a": map[string]any{"$ref": httpURL}}},
		"http $dynamicRef":      {"$dynamicRef": httpURL},
		"relative under $id":    {"$id": "http://" + ln.Addr().String() + "/root.json", "$ref": "s.json"},
		"http $schema":          {"$schema": httpURL},
		"file $schema":          {"$schema": fileURL},
		"embedded $id resource": {"$ref": "#/$defs/x", "$defs": map[string]any{"x": map[string]any{"$id": httpURL, "$ref": "other.json"}}},
	}
	for name, s := range schemas {
		t.Run(name, func(t *testing.T) {
			m := manifest.CapabilityManifest{ID: manifest.CapabilityID{Namespace: "t", Name: "n", Version: "1.0.0"}, RequestSchema: s}
			var v manifest.Validator
			_, err := v.PrepareRequest(m, map[string]any{})
			if !errors.Is(err, manifest.ErrExternalReference) && !errors.Is(err, manifest.ErrInvalidSchema) {
				t.Errorf("PrepareRequest: %v, want a refusal", err)
			}
			// Without the key walk, the loader alone must refuse too.
			if err := manifest.CompileWithoutPrecheck(s); err == nil {
				t.Errorf("compiled without precheck: the loader resolved an external resource")
			}
		})
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("listener received %d connections", n)
	}
}
