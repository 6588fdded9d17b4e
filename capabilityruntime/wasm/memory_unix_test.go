//go:build unix

package wasm

import (
	"testing"

	"pgregory.net/rapid"
)

// TestMemoryPoolGivesZeroedMemory: whatever instances wrote and however far
// they grew, every memory the pool hands out reads zero over its whole
// reservation, the pool never holds more than poolRegions, a memory used
// past poolMaxBytes is not kept, and close empties it.
func TestMemoryPoolGivesZeroedMemory(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := newMemoryPool()
		defer p.close()
		sizes := []uint64{4 << 16, 8 << 16, 2 * poolMaxBytes}
		var live []*mappedMemory
		for range rapid.IntRange(1, 60).Draw(t, "steps") {
			switch op := rapid.IntRange(0, 2).Draw(t, "op"); {
			case op == 0 || len(live) == 0:
				max := rapid.SampledFrom(sizes).Draw(t, "max")
				m, ok := p.allocate(0, max).(*mappedMemory)
				if !ok {
					t.Fatalf("allocate(%d) did not map", max)
				}
				if uint64(len(m.region)) != max || m.used != 0 {
					t.Fatalf("allocate(%d) gave %d bytes, %d used", max, len(m.region), m.used)
				}
				for i, c := range m.region {
					if c != 0 {
						t.Fatalf("allocate(%d): byte %d is %#x", max, i, c)
					}
				}
				live = append(live, m)
			case op == 1:
				m := live[rapid.IntRange(0, len(live)-1).Draw(t, "which")]
				size := rapid.Uint64Range(0, uint64(len(m.region))).Draw(t, "size")
				buf := m.Reallocate(size)
				if uint64(len(buf)) != size {
					t.Fatalf("Reallocate(%d) gave %d bytes", size, len(buf))
				}
				for i := range buf {
					buf[i] = 0xa5
				}
				if m.Reallocate(uint64(len(m.region))+1) != nil {
					t.Fatal("Reallocate past the reservation succeeded")
				}
			default:
				i := rapid.IntRange(0, len(live)-1).Draw(t, "which")
				m := live[i]
				live = append(live[:i], live[i+1:]...)
				before, used := p.pooled(), m.used
				m.Free()
				m.Free() // a second Free does nothing
				if after := p.pooled(); used > poolMaxBytes && after != before {
					t.Fatalf("a memory used to %d bytes was pooled", used)
				}
			}
			if n := p.pooled(); n > poolRegions {
				t.Fatalf("the pool holds %d memories", n)
			}
		}
		for _, m := range live {
			m.Free()
		}
		p.close()
		if n := p.pooled(); n != 0 {
			t.Fatalf("close left %d memories", n)
		}
	})
}

// TestMemoryPoolClosedUnmaps: a memory freed after close is not kept.
func TestMemoryPoolClosedUnmaps(t *testing.T) {
	p := newMemoryPool()
	m := p.allocate(0, 1<<16).(*mappedMemory)
	m.Reallocate(1 << 16)[0] = 1
	p.close()
	m.Free()
	if n := p.pooled(); n != 0 {
		t.Fatalf("the closed pool kept %d memories", n)
	}
}
