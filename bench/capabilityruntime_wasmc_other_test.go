//go:build !linux

package bench

import (
	"testing"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
)

// benchWasmPhases rebuilds the wasm backend's Linux memory allocator; see
// capabilityruntime_wasmc_linux_test.go.
func benchWasmPhases(b *testing.B, _ string, _ capabilityruntime.BackendInstance, _ map[string]any, _ int, _ bool) {
	b.Skip("the phases of a wasm call are measured on Linux only")
}

// Memory allocators of benchWasmPhases.
const (
	memoryPooled = iota
	memoryUnmapped
	memoryHeap
)
