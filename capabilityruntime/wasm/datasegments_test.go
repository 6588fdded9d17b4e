package wasm

import (
	"bytes"
	"testing"
)

// sections splits a module into its sections (id and raw content), or
// answers nil when it cannot.
func sections(code []byte) [][2][]byte {
	var out [][2][]byte
	for i := 8; i < len(code); {
		size, n, ok := uleb32(code[i+1:])
		if !ok || uint64(i+1+n)+uint64(size) > uint64(len(code)) {
			return nil
		}
		out = append(out, [2][]byte{{code[i]}, code[i+1+n : i+1+n+int(size)]})
		i += 1 + n + int(size)
	}
	return out
}

// memoryImage applies a module's data segments in order, as instantiation
// does, and returns the bytes they set by address.
func memoryImage(t *testing.T, code []byte) map[uint32]byte {
	t.Helper()
	img := map[uint32]byte{}
	for _, s := range sections(code) {
		if s[0][0] != sectionData {
			continue
		}
		segs, err := parseDataSection(s[1])
		if err != nil {
			t.Fatalf("data section does not parse: %v", err)
		}
		for _, seg := range segs {
			for i, c := range seg.data {
				if c != 0 {
					img[seg.offset+uint32(i)] = c
				} else {
					delete(img, seg.offset+uint32(i))
				}
			}
		}
	}
	return img
}

// checkMerge asserts what mergeDataSegments promises of in → out: the same
// bytes when it did not merge; else the same sections but the data, one data
// segment, and the same memory image.
func checkMerge(t *testing.T, in, out []byte) {
	t.Helper()
	if bytes.Equal(in, out) {
		return
	}
	a, b := sections(in), sections(out)
	if a == nil || b == nil || len(a) != len(b) {
		t.Fatalf("sections before %d, after %d", len(a), len(b))
	}
	for i := range a {
		if a[i][0][0] != b[i][0][0] {
			t.Fatalf("section %d: id %d became %d", i, a[i][0][0], b[i][0][0])
		}
		if a[i][0][0] == sectionData {
			segs, err := parseDataSection(b[i][1])
			if err != nil || len(segs) != 1 {
				t.Fatalf("merged data section: %d segments, %v", len(segs), err)
			}
			continue
		}
		if !bytes.Equal(a[i][1], b[i][1]) {
			t.Fatalf("section %d (id %d) changed", i, a[i][0][0])
		}
	}
	ia, ib := memoryImage(t, in), memoryImage(t, out)
	if len(ia) != len(ib) {
		t.Fatalf("memory image: %d bytes set before, %d after", len(ia), len(ib))
	}
	for addr, c := range ia {
		if ib[addr] != c {
			t.Fatalf("memory image differs at %#x", addr)
		}
	}
}

// threeSegments is a module with a memory and three active data segments,
// two of them overlapping.
var threeSegments = []byte{
	0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
	0x05, 0x03, 0x01, 0x00, 0x01, // memory: min 1 page
	0x0b, 0x17, 0x03, // data: 3 segments
	0x00, 0x41, 0x10, 0x0b, 0x03, 'a', 'b', 'c', // at 16
	0x00, 0x41, 0x12, 0x0b, 0x02, 'X', 'Y', // at 18, over "c"
	0x00, 0x41, 0x80, 0x01, 0x0b, 0x01, 'z', // at 128
}

func TestMergeDataSegments(t *testing.T) {
	out := mergeDataSegments(threeSegments)
	if bytes.Equal(out, threeSegments) {
		t.Fatal("three segments were not merged")
	}
	checkMerge(t, threeSegments, out)
	img := memoryImage(t, out)
	if string([]byte{img[16], img[17], img[18], img[19], img[128]}) != "abXYz" {
		t.Errorf("merged image %v", img)
	}
	for name, code := range map[string][]byte{
		"not wasm":  []byte("hello"),
		"truncated": threeSegments[:20],
		"one segment": {
			0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
			0x0b, 0x07, 0x01, 0x00, 0x41, 0x00, 0x0b, 0x01, 'a',
		},
		"passive": {
			0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
			0x0b, 0x07, 0x02, 0x01, 0x01, 'a', 0x01, 0x01, 'b',
		},
	} {
		if out := mergeDataSegments(code); !bytes.Equal(out, code) {
			t.Errorf("%s: rewritten", name)
		}
	}
}

func FuzzMergeDataSegments(f *testing.F) {
	f.Add(threeSegments)
	f.Add([]byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00})
	f.Add([]byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x0b, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, code []byte) {
		checkMerge(t, code, mergeDataSegments(code))
	})
}
