package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"

	"github.com/zeoruntime/runtimeipc/ledger"
)

// The page check: bbolt's file structure verified from the file's bytes.
//
// bbolt reads its pages through a memory map and trusts every offset in
// them, and its own consistency check (Tx.Check) reads the map on a
// goroutine of its own, where a fault on a damaged file cannot be turned
// into a panic: it would end the process. So Open checks the structure
// itself, reading the file with pread into the heap, where a bad offset is
// just an error: the meta page bbolt will use (the valid one with the
// higher transaction id), a file at least as long as its high water mark,
// every page reachable from the root bucket (branch and leaf pages,
// overflow included, nested and inline buckets) inside the high water
// mark, of a known type, referenced once, with its elements, keys and
// values inside the page and its keys in order, and the freelist: ids
// inside the high water mark, none twice, none reachable, and every page
// either reachable or free. Once it passes, nothing bbolt follows in the
// map points outside the file.

// On-disk layout constants of bbolt (its internal/common package).
const (
	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	elementSize      = 16 // branch: pos, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	bucketHeaderSize = 16 // root pgid u64, sequence u64
	metaSize         = 64 // magic, version, page size, flags u32; root bucket; freelist, pgid, txid, checksum u64
	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	metaPageFlag     = 0x04
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01
	bboltMagic       = 0xED0CDAED
	bboltVersion     = 2
	minPageSize      = 1024
	maxPageSize      = 1 << 16
)

// meta is bbolt's meta page, as checkPages needs it.
type meta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	hwm      uint64 // the high water mark: pages 0..hwm-1 exist
	txid     uint64
}

func readMeta(b []byte) (meta, bool) {
	if len(b) < pageHeaderSize+metaSize || binary.LittleEndian.Uint16(b[8:]) != metaPageFlag {
		return meta{}, false
	}
	m := b[pageHeaderSize : pageHeaderSize+metaSize]
	h := fnv.New64a()
	h.Write(m[:56])
	le := binary.LittleEndian
	if le.Uint32(m) != bboltMagic || le.Uint32(m[4:]) != bboltVersion || le.Uint64(m[56:]) != h.Sum64() {
		return meta{}, false
	}
	return meta{pageSize: le.Uint32(m[8:]), root: le.Uint64(m[16:]), freelist: le.Uint64(m[32:]), hwm: le.Uint64(m[40:]), txid: le.Uint64(m[48:])}, true
}

// pageChecker walks the pages of one file.
type pageChecker struct {
	f        *os.File
	ps       uint64
	hwm      uint64
	reached  []bool // by page id
	free     []bool
	bufs     [][]byte // a page buffer per tree depth (read)
	problems []error
}

func (c *pageChecker) bad(format string, args ...any) {
	if len(c.problems) < maxPageProblems {
		c.problems = append(c.problems, fmt.Errorf(format, args...))
	}
}

// maxPageProblems bounds the problems checkPages reports.
const maxPageProblems = 10

// checkPages checks the structure of the bbolt file f (see the comment
// above). Its error wraps ledger.ErrCorrupt, unless reading failed.
func checkPages(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := uint64(fi.Size())
	// The two meta pages, the second one page size after the first: as
	// bbolt does, take the page size from the first when it is valid, else
	// try every page size for the second (the first may be a torn write).
	buf := make([]byte, min(2*maxPageSize, size))
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	m, ok := readMeta(buf)
	for ps := uint64(minPageSize); ps <= maxPageSize && ps < size; ps *= 2 {
		if ok && ps != uint64(m.pageSize) {
			continue
		}
		if m1, ok1 := readMeta(buf[ps:]); ok1 && uint64(m1.pageSize) == ps && (!ok || m1.txid > m.txid) {
			m, ok = m1, true
		}
	}
	if !ok {
		return fmt.Errorf("no valid meta page: %w", ledger.ErrCorrupt)
	}
	ps := uint64(m.pageSize)
	switch {
	case ps < minPageSize || ps > maxPageSize || ps&(ps-1) != 0:
		return fmt.Errorf("page size %d: %w", ps, ledger.ErrCorrupt)
	case m.hwm < 3 || m.hwm > size/ps:
		return fmt.Errorf("high water mark of %d pages of %d bytes, file of %d bytes (truncated?): %w", m.hwm, ps, size, ledger.ErrCorrupt)
	}
	c := &pageChecker{f: f, ps: ps, hwm: m.hwm, reached: make([]bool, m.hwm), free: make([]bool, m.hwm)}
	c.reached[0], c.reached[1] = true, true
	c.freelist(m.freelist)
	c.page(m.root, nil, nil, 0)
	for id := uint64(2); id < m.hwm && len(c.problems) == 0; id++ {
		if !c.reached[id] && !c.free[id] {
			c.bad("page %d is neither reachable nor free", id)
		}
	}
	if len(c.problems) > 0 {
		return fmt.Errorf("bbolt page structure: %w: %w", ledger.ErrCorrupt, errors.Join(c.problems...))
	}
	return nil
}

// read returns page id and its overflow pages, after checking that they
// lie inside the high water mark and were not reached before; nil after a
// problem. The bytes live in a buffer of depth's, valid until the next
// read at the same depth (a page's children are read one level deeper
// while its bytes are still in use).
func (c *pageChecker) read(id uint64, depth int, what string) []byte {
	if id < 2 || id >= c.hwm {
		c.bad("%s page %d outside pages 2..%d", what, id, c.hwm-1)
		return nil
	}
	for len(c.bufs) <= depth {
		c.bufs = append(c.bufs, make([]byte, c.ps))
	}
	b := c.bufs[depth][:c.ps]
	if _, err := c.f.ReadAt(b, int64(id*c.ps)); err != nil {
		c.bad("reading %s page %d: %v", what, id, err)
		return nil
	}
	le := binary.LittleEndian
	overflow := uint64(le.Uint32(b[12:]))
	if got := le.Uint64(b); got != id {
		c.bad("%s page %d says it is page %d", what, id, got)
		return nil
	}
	if overflow >= c.hwm-id {
		c.bad("%s page %d overflows past the high water mark (%d more pages)", what, id, overflow)
		return nil
	}
	for p := id; p <= id+overflow; p++ {
		if c.reached[p] || c.free[p] {
			c.bad("%s page %d: page %d reached twice, or both reached and free", what, id, p)
			return nil
		}
		c.reached[p] = true
	}
	if overflow > 0 {
		span := (1 + overflow) * c.ps
		if uint64(cap(c.bufs[depth])) < span {
			c.bufs[depth] = make([]byte, span)
		}
		b = c.bufs[depth][:span]
		if _, err := c.f.ReadAt(b, int64(id*c.ps)); err != nil {
			c.bad("reading %s page %d: %v", what, id, err)
			return nil
		}
	}
	return b
}

// freelist marks the pages the freelist page id lists as free.
func (c *pageChecker) freelist(id uint64) {
	b := c.read(id, 0, "freelist")
	if b == nil {
		return
	}
	le := binary.LittleEndian
	if le.Uint16(b[8:]) != freelistPageFlag {
		c.bad("freelist page %d has flags %#x", id, le.Uint16(b[8:]))
		return
	}
	n, at := uint64(le.Uint16(b[10:])), uint64(pageHeaderSize)
	if n == 0xFFFF { // the count overflowed into the first element
		n, at = le.Uint64(b[pageHeaderSize:]), pageHeaderSize+8
	}
	if n > (uint64(len(b))-at)/8 {
		c.bad("freelist page %d lists %d ids, more than it holds", id, n)
		return
	}
	for i := range n {
		p := le.Uint64(b[at+8*i:])
		switch {
		case p < 2 || p >= c.hwm:
			c.bad("freelist lists page %d outside pages 2..%d", p, c.hwm-1)
			return
		case c.free[p] || c.reached[p]:
			c.bad("freelist lists page %d twice, or a page in use", p)
			return
		}
		c.free[p] = true
	}
}

// page checks the branch or leaf page id of a bucket's tree, whose keys
// must lie in [lo, hi) (nil: unbounded), depth pages (of trees and of
// buckets nested in them) below the root bucket's root.
func (c *pageChecker) page(id uint64, lo, hi []byte, depth int) {
	if depth > 64 {
		c.bad("page %d: trees nested deeper than 64 pages", id)
		return
	}
	b := c.read(id, depth, "tree")
	if b == nil {
		return
	}
	c.elements(b, id, lo, hi, depth, false)
}

// elements checks the elements of the page b (a tree page, or, inline, an
// inline bucket's page inside a value), named id in messages.
//
// bbolt lays a page out as its element headers, then the keys and values
// of the elements in element order, each right after the one before
// (common.WriteInodeToPage), and an inline bucket's value is exactly that
// long; a page it writes starts zeroed, so an empty leaf is zeros after
// its header. The check holds the page to that layout, so that a damaged
// element count, which would drop the last elements of a page without
// breaking the key order, is found.
func (c *pageChecker) elements(b []byte, id uint64, lo, hi []byte, depth int, inline bool) {
	le := binary.LittleEndian
	flags, n := le.Uint16(b[8:]), int(le.Uint16(b[10:]))
	if flags != branchPageFlag && flags != leafPageFlag {
		c.bad("page %d has flags %#x, not a branch or leaf page", id, flags)
		return
	}
	if n == 0 && flags == branchPageFlag || pageHeaderSize+n*elementSize > len(b) {
		c.bad("page %d: %d elements do not fit", id, n)
		return
	}
	if n == 0 && (inline && len(b) != pageHeaderSize || !inline && !allZero(b[pageHeaderSize:])) {
		c.bad("page %d: no elements, but bytes after its header", id)
		return
	}
	var prev []byte
	want := uint64(pageHeaderSize + n*elementSize) // where the next element's key must start
	for i := range n {
		e := pageHeaderSize + i*elementSize
		var pos, ksize, vsize uint64
		if flags == branchPageFlag {
			pos, ksize = uint64(le.Uint32(b[e:])), uint64(le.Uint32(b[e+4:]))
		} else {
			pos, ksize, vsize = uint64(le.Uint32(b[e+4:])), uint64(le.Uint32(b[e+8:])), uint64(le.Uint32(b[e+12:]))
		}
		start := uint64(e) + pos
		if start+ksize+vsize > uint64(len(b)) || pos < elementSize {
			c.bad("page %d element %d: key and value outside the page", id, i)
			return
		}
		if start != want {
			c.bad("page %d element %d: key at offset %d, want %d (the element count or an offset is damaged)", id, i, start, want)
			return
		}
		want = start + ksize + vsize
		key := b[start : start+ksize]
		if i > 0 && bytes.Compare(prev, key) >= 0 || lo != nil && bytes.Compare(key, lo) < 0 || hi != nil && bytes.Compare(key, hi) >= 0 {
			c.bad("page %d element %d: key out of order", id, i)
			return
		}
		prev = key
		if flags == branchPageFlag {
			next := hi
			if i+1 < n {
				f := pageHeaderSize + (i+1)*elementSize
				np, nk := uint64(le.Uint32(b[f:])), uint64(le.Uint32(b[f+4:]))
				if uint64(f)+np+nk > uint64(len(b)) {
					c.bad("page %d element %d: key outside the page", id, i+1)
					return
				}
				next = b[uint64(f)+np : uint64(f)+np+nk]
			}
			c.page(le.Uint64(b[e+8:]), key, next, depth+1)
			continue
		}
		if le.Uint32(b[e:])&bucketLeafFlag == 0 {
			continue
		}
		v := b[start+ksize : start+ksize+vsize]
		if len(v) < bucketHeaderSize {
			c.bad("page %d element %d: bucket value of %d bytes", id, i, len(v))
			return
		}
		if root := le.Uint64(v); root != 0 {
			c.page(root, nil, nil, depth+1)
		} else if len(v) < bucketHeaderSize+pageHeaderSize {
			c.bad("page %d element %d: inline bucket of %d bytes", id, i, len(v))
			return
		} else {
			c.elements(v[bucketHeaderSize:], id, nil, nil, depth+1, true)
		}
	}
	if inline && want != uint64(len(b)) {
		c.bad("page %d: inline bucket of %d bytes, its elements end at %d", id, len(b), want)
	}
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}
