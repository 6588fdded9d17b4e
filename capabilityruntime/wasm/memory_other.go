//go:build !unix

package wasm

import "github.com/tetratelabs/wazero/experimental"

// allocate returns a heap-backed memory: the platform has no mmap.
func allocate(capacity, max uint64) experimental.LinearMemory {
	return &heapMemory{buf: make([]byte, 0, min(capacity, max)), max: max}
}
