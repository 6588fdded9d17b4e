//go:build !unix

package wasm

import "github.com/tetratelabs/wazero/experimental"

// memoryPool allocates heap-backed memories: the platform has no mmap, and
// a freed Go slice costs nothing to give back.
type memoryPool struct{}

func newMemoryPool() *memoryPool { return &memoryPool{} }

func (p *memoryPool) allocate(capacity, max uint64) experimental.LinearMemory {
	return &heapMemory{buf: make([]byte, 0, min(capacity, max)), max: max}
}

func (p *memoryPool) close() {}

func (p *memoryPool) pooled() int { return 0 }
