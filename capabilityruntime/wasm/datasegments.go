package wasm

import (
	"bytes"
	"errors"
)

// Why the data section is rewritten: Go's linker splits a module's static
// data into one active segment per run of non-zero bytes (some 50,000 for
// a small program), and wazero evaluates every segment's offset expression
// and copies it at every instantiation. Since this backend instantiates the
// module for every call, that was about 40% of a call. mergeDataSegments
// replaces such a data section with one segment that holds the same bytes
// at the same addresses (the gaps filled with the zeros the memory starts
// with), which instantiates as one copy. The module's checksum is verified
// on the bytes as installed, before this rewrite.

// Section ids of the WebAssembly binary format that the rewrite looks at.
const (
	sectionData      = 11
	sectionDataCount = 12
)

// errNotMergeable says that a module's data section is left as it is: it is
// not in the one shape the rewrite handles, or has nothing to gain.
var errNotMergeable = errors.New("data section not mergeable")

// segment is one active data segment of memory 0 at a constant offset.
type segment struct {
	offset uint32
	data   []byte
}

// mergeDataSegments returns code with its data section merged into one
// segment when every segment is active, of memory 0, at an i32.const
// offset, and the span they cover is at most twice their bytes plus 1 MiB
// (so that the result grows by little). Any other module — passive
// segments, a data count section, anything it does not understand,
// including malformed bytes — is returned unchanged, for wazero to judge.
// It never panics; FuzzMergeDataSegments holds it to that and to keeping
// the memory image.
func mergeDataSegments(code []byte) []byte {
	out, err := merge(code)
	if err != nil {
		return code
	}
	return out
}

func merge(code []byte) ([]byte, error) {
	if len(code) < 8 || !bytes.Equal(code[:8], []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}) {
		return nil, errNotMergeable
	}
	dataStart, dataEnd := -1, -1 // the whole data section, id and size included
	var body []byte
	for i := 8; i < len(code); {
		start := i
		id := code[i]
		size, n, ok := uleb32(code[i+1:])
		if !ok || uint64(i+1+n)+uint64(size) > uint64(len(code)) {
			return nil, errNotMergeable
		}
		i += 1 + n
		switch id {
		case sectionDataCount:
			return nil, errNotMergeable // memory.init and data.drop name segments by index
		case sectionData:
			if dataStart >= 0 {
				return nil, errNotMergeable
			}
			dataStart, dataEnd, body = start, i+int(size), code[i:i+int(size)]
		}
		i += int(size)
	}
	if dataStart < 0 {
		return nil, errNotMergeable
	}
	segs, err := parseDataSection(body)
	if err != nil || len(segs) < 2 {
		return nil, errNotMergeable
	}
	lo, hi, total := uint64(segs[0].offset), uint64(0), uint64(0)
	for _, s := range segs {
		lo = min(lo, uint64(s.offset))
		hi = max(hi, uint64(s.offset)+uint64(len(s.data)))
		total += uint64(len(s.data))
	}
	if hi-lo > 2*total+1<<20 || hi > 1<<32 {
		return nil, errNotMergeable
	}
	image := make([]byte, hi-lo)
	for _, s := range segs { // in order: a later segment wins where two overlap, as at instantiation
		copy(image[uint64(s.offset)-lo:], s.data)
	}
	var sec []byte
	sec = appendULEB(sec, 1) // one segment
	sec = appendULEB(sec, 0) // active, memory 0
	sec = append(sec, 0x41)  // i32.const
	sec = appendSLEB(sec, int64(int32(uint32(lo))))
	sec = append(sec, 0x0b) // end
	sec = appendULEB(sec, uint64(len(image)))
	sec = append(sec, image...)

	out := make([]byte, 0, len(code)-(dataEnd-dataStart)+len(sec)+6)
	out = append(out, code[:dataStart]...)
	out = append(out, sectionData)
	out = appendULEB(out, uint64(len(sec)))
	out = append(out, sec...)
	out = append(out, code[dataEnd:]...)
	return out, nil
}

// parseDataSection reads a data section's segments, refusing every shape
// but active segments of memory 0 at an i32.const offset.
func parseDataSection(b []byte) ([]segment, error) {
	count, n, ok := uleb32(b)
	if !ok || uint64(count) > uint64(len(b)) { // every segment takes at least one byte
		return nil, errNotMergeable
	}
	b = b[n:]
	segs := make([]segment, 0, count)
	for range count {
		flags, n, ok := uleb32(b)
		if !ok || flags != 0 {
			return nil, errNotMergeable
		}
		b = b[n:]
		if len(b) == 0 || b[0] != 0x41 {
			return nil, errNotMergeable
		}
		off, n, ok := sleb32(b[1:])
		if !ok || len(b) < 2+n || b[1+n] != 0x0b {
			return nil, errNotMergeable
		}
		b = b[2+n:]
		size, n, ok := uleb32(b)
		if !ok || uint64(n)+uint64(size) > uint64(len(b)) {
			return nil, errNotMergeable
		}
		segs = append(segs, segment{offset: uint32(off), data: b[n : n+int(size)]})
		b = b[n+int(size):]
	}
	if len(b) != 0 {
		return nil, errNotMergeable
	}
	return segs, nil
}

// uleb32 decodes an unsigned LEB128 number of at most 32 bits, answering
// its value and length, or false when b does not start with one.
func uleb32(b []byte) (uint32, int, bool) {
	var v uint64
	for i := 0; i < 5 && i < len(b); i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if v > 1<<32-1 {
				return 0, 0, false
			}
			return uint32(v), i + 1, true
		}
	}
	return 0, 0, false
}

// sleb32 decodes a signed LEB128 number of at most 32 bits.
func sleb32(b []byte) (int32, int, bool) {
	var v int64
	for i := 0; i < 5 && i < len(b); i++ {
		v |= int64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			if shift := 7 * (i + 1); shift < 64 && b[i]&0x40 != 0 {
				v |= -1 << shift
			}
			if v < -1<<31 || v > 1<<31-1 {
				return 0, 0, false
			}
			return int32(v), i + 1, true
		}
	}
	return 0, 0, false
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
