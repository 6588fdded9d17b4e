//go:build unix

package wasm

import (
	"sync"
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// Pooling: unmapping a reservation costs more than everything else a
// small module's instance does with its memory (BENCHMARKS.md, the C
// guest: 27 µs for a module that touched four pages, the TLB flush of a
// multi-threaded process), so a Backend keeps a few freed mappings and
// gives them to later instances. A mapping is pooled only if its instance
// never grew it past poolMaxBytes, and it is zeroed over every byte the
// instance could reach (the largest size Reallocate returned: wazero
// bounds every access by the slice it was given) before it is pooled, so
// an instance's memory is zero as a fresh mapping's is and nothing of one
// call reaches the next. Larger memories are unmapped, as before: zeroing
// them would cost more than the kernel's fresh pages, and keeping them
// would hold their pages.
const (
	// poolMaxBytes is the most of a mapping an instance may have used for
	// it to be pooled: 1 MiB, 16 pages.
	poolMaxBytes = 1 << 20
	// poolRegions is how many freed mappings a Backend keeps, at most
	// poolRegions × poolMaxBytes of touched memory.
	poolRegions = 8
)

// memoryPool is one Backend's allocator of linear memories and its pool of
// freed mappings. It is safe for concurrent use.
type memoryPool struct {
	mu     sync.Mutex      // guards the fields below
	free   []*mappedMemory // zeroed mappings ready for reuse
	closed bool            // set by close; later frees unmap
}

func newMemoryPool() *memoryPool { return &memoryPool{} }

// mappedMemory is a linear memory reserved at its maximum in one anonymous
// private mapping (MAP_NORESERVE: the reservation is address space, not
// memory); its length grows, its address never changes.
type mappedMemory struct {
	pool   *memoryPool
	region []byte // the whole mapping; nil once freed
	used   uint64 // the largest size Reallocate returned
}

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.region)) {
		return nil
	}
	m.used = max(m.used, size)
	return m.region[:size]
}

// Free zeroes the region and gives it back to the pool, or unmaps it.
// wazero calls it once, when the instance closes, on the goroutine that ran
// the instance: no code of the instance can touch it afterwards.
func (m *mappedMemory) Free() {
	region := m.region
	if region == nil {
		return
	}
	m.region = nil
	if m.pool.put(region, m.used) {
		return
	}
	_ = syscall.Munmap(region) // fails only for a region that is not mapped
}

// put zeroes the first used bytes of region and keeps it, unless it was
// used past poolMaxBytes, the pool is full or closed; it reports whether
// it kept region.
func (p *memoryPool) put(region []byte, used uint64) bool {
	if used > poolMaxBytes {
		return false
	}
	clear(region[:used])
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.free) >= poolRegions {
		return false
	}
	p.free = append(p.free, &mappedMemory{pool: p, region: region})
	return true
}

// allocate returns a pooled mapping of max bytes, or maps one, or falls
// back to the heap when it cannot (a zero-page maximum, an exhausted
// address space).
func (p *memoryPool) allocate(capacity, max uint64) experimental.LinearMemory {
	if max > 0 && max <= 1<<32 {
		p.mu.Lock()
		for i := len(p.free) - 1; i >= 0; i-- {
			if m := p.free[i]; uint64(len(m.region)) == max {
				p.free = append(p.free[:i], p.free[i+1:]...)
				p.mu.Unlock()
				return m
			}
		}
		p.mu.Unlock()
		if region, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve); err == nil {
			return &mappedMemory{pool: p, region: region}
		}
	}
	return &heapMemory{buf: make([]byte, 0, min(capacity, max)), max: max}
}

// close unmaps the pooled mappings; memories freed later are unmapped.
func (p *memoryPool) close() {
	p.mu.Lock()
	free := p.free
	p.free, p.closed = nil, true
	p.mu.Unlock()
	for _, m := range free {
		_ = syscall.Munmap(m.region)
	}
}

// pooled is how many mappings the pool holds (for tests).
func (p *memoryPool) pooled() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free)
}
