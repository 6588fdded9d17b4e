//go:build unix

package wasm_test

import (
	"context"
	"testing"

	"github.com/zeoruntime/runtimeipc/capabilityruntime/wasm"
)

// section is one WebAssembly section: its id, its length, its contents.
func section(id byte, content ...byte) []byte {
	return append([]byte{id, byte(len(content))}, content...)
}

// markerModule is a module written by hand whose _start traps unless the
// 32-bit word at address 200 of its memory is zero, then sets it to 1 and
// writes {"result":{}} to stdout: a small memory (one page), so that the
// Backend pools it, and a call that fails if a reused memory was not
// zeroed.
func markerModule() []byte {
	resp := []byte(`{"result":{}}`)
	code := []byte{
		0x00,                               // no locals
		0x41, 0xc8, 0x01, 0x28, 0x02, 0x00, // i32.load (i32.const 200)
		0x04, 0x40, 0x00, 0x0b, // if: unreachable
		0x41, 0xc8, 0x01, 0x41, 0x01, 0x36, 0x02, 0x00, // i32.store 200 ← 1
		0x41, 0x01, 0x41, 0x10, 0x41, 0x01, 0x41, 0x18, 0x10, 0x00, 0x1a, // drop fd_write(1, iov 16, 1, nwritten 24)
		0x0b,
	}
	var m []byte
	m = append(m, 0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00)
	m = append(m, section(1, 0x02, 0x60, 0x04, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0x7f, 0x60, 0x00, 0x00)...)
	imp := []byte{0x01, 22}
	imp = append(imp, "wasi_snapshot_preview1"...)
	imp = append(imp, 8)
	imp = append(imp, "fd_write"...)
	imp = append(imp, 0x00, 0x00)
	m = append(m, section(2, imp...)...)
	m = append(m, section(3, 0x01, 0x01)...)
	m = append(m, section(5, 0x01, 0x00, 0x01)...) // one memory, one page, no maximum
	exp := []byte{0x02, 6}
	exp = append(exp, "memory"...)
	exp = append(exp, 0x02, 0x00, 6)
	exp = append(exp, "_start"...)
	exp = append(exp, 0x00, 0x01)
	m = append(m, section(7, exp...)...)
	m = append(m, section(10, append([]byte{0x01, byte(len(code))}, code...)...)...)
	data := []byte{0x02,
		0x00, 0x41, 0x10, 0x0b, 0x08, 0x20, 0x00, 0x00, 0x00, byte(len(resp)), 0x00, 0x00, 0x00, // iov at 16: {32, len}
		0x00, 0x41, 0x20, 0x0b, byte(len(resp))}
	data = append(data, resp...)
	m = append(m, section(11, data...)...)
	return m
}

// TestReusedMemoryIsZero: a small module's memory is kept by the Backend
// and given to the next call zeroed; a call that found its predecessor's
// marker would trap. Close frees the kept memories.
func TestReusedMemoryIsZero(t *testing.T) {
	b := newBackend(t, wasm.Config{DefaultMaxWorkers: 3})
	inst := start(t, b, install(t, "test:marker", markerModule(), nil))
	for i := range 10 {
		resp, err := call(t, inst, map[string]any{"i": i})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if len(resp.Result) != 0 {
			t.Fatalf("call %d: %v", i, resp.Result)
		}
	}
	if n := wasm.PooledMemories(b); n < 1 {
		t.Fatalf("the Backend kept %d memories after 10 calls of a one-page module", n)
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := wasm.PooledMemories(b); n != 0 {
		t.Fatalf("Close left %d memories", n)
	}
}
