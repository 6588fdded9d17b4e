//go:build unix

package wasm

import (
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// mappedMemory is a linear memory reserved at its maximum in one anonymous
// private mapping (MAP_NORESERVE: the reservation is address space, not
// memory); its length grows, its address never changes.
type mappedMemory struct {
	region []byte // the whole mapping; nil once freed
}

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if size > uint64(len(m.region)) {
		return nil
	}
	return m.region[:size]
}

// Free unmaps the region. wazero calls it once, when the instance closes,
// on the goroutine that ran the instance: no code of the instance can touch
// it afterwards.
func (m *mappedMemory) Free() {
	if m.region != nil {
		_ = syscall.Munmap(m.region) // fails only for a region that is not mapped
		m.region = nil
	}
}

// allocate maps max bytes, or falls back to the heap when it cannot (a
// zero-page maximum, an exhausted address space).
func allocate(capacity, max uint64) experimental.LinearMemory {
	if max > 0 && max <= 1<<32 {
		if region, err := syscall.Mmap(-1, 0, int(max), syscall.PROT_READ|syscall.PROT_WRITE,
			syscall.MAP_PRIVATE|syscall.MAP_ANON|mapNoReserve); err == nil {
			return &mappedMemory{region: region}
		}
	}
	return &heapMemory{buf: make([]byte, 0, min(capacity, max)), max: max}
}
