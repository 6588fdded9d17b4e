package wasm

import (
	"context"

	"github.com/tetratelabs/wazero/experimental"
)

// Why the backend allocates linear memory itself: wazero's default grows a
// module's memory as a Go slice, copying it at every memory.grow and
// zeroing it first, and a Go module grows its memory many times while its
// runtime starts; at one instance per call that was a tenth of a call and
// almost all of its garbage. Where the platform allows it (memory_unix.go)
// each instance reserves its maximum as one anonymous mapping instead:
// growing is a length change, the kernel supplies zero pages as they are
// touched, and the mapping is unmapped when the instance closes, or, for a
// small memory, zeroed and kept for a later instance of the same Backend
// (memoryPool in memory_unix.go).

// heapMemory is the portable LinearMemory, and the fallback when a mapping
// cannot be made: a Go slice that keeps its contents when it grows, never
// past max.
type heapMemory struct {
	buf []byte
	max uint64
}

func (m *heapMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if size <= uint64(cap(m.buf)) {
		m.buf = m.buf[:size]
		return m.buf
	}
	grown := make([]byte, size, min(max(size, 2*uint64(cap(m.buf))), m.max))
	copy(grown, m.buf)
	m.buf = grown
	return m.buf
}

func (m *heapMemory) Free() { m.buf = nil }

// callContext is the context a module instance is given: the call's
// deadline and cancellation, and, of all values, only the memory allocator
// (see instance.Execute for why no other value reaches wazero).
type callContext struct {
	context.Context                 // the call's
	values          context.Context // holds the allocator only
}

// Value answers the allocator's key only.
func (c callContext) Value(key any) any { return c.values.Value(key) }

// allocatorValues is the context holding a backend's memory allocator.
func allocatorValues(p *memoryPool) context.Context {
	return experimental.WithMemoryAllocator(context.Background(), experimental.MemoryAllocatorFunc(p.allocate))
}
