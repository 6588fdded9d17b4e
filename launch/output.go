package launch

import (
	"errors"
	"io"
	"sync"
)

// copyChunk is the read size of ReadFrom: exec copies a child's stdout and
// stderr pipes with io.Copy, which hands the pipe to our ReadFrom instead
// of allocating its own 32 KiB buffer per stream and launch. The host's
// stdout is one line and its stderr nothing by design, so a small buffer
// is one read; a misbehaving host costs more reads, never more memory.
const copyChunk = 4 << 10

// readAll feeds r to write in copyChunk reads until EOF (io.ReaderFrom's
// contract: EOF is not an error).
func readAll(r io.Reader, write func([]byte)) (int64, error) {
	buf := make([]byte, copyChunk)
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			write(buf[:k])
			n += int64(k)
		}
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// headWriter keeps the first max bytes written and counts the rest, which it
// discards: the host is never blocked on a full stdout pipe, and memory stays
// bounded whatever it writes. Safe for one writer and concurrent readers
// after the writer is done (exec's copying goroutine writes; Wait orders).
type headWriter struct {
	mu    sync.Mutex
	max   int
	buf   []byte
	total int64
}

func (w *headWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total += int64(len(p))
	if room := w.max - len(w.buf); room > 0 {
		w.buf = append(w.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// ReadFrom reads r to EOF as Write would receive it.
func (w *headWriter) ReadFrom(r io.Reader) (int64, error) {
	return readAll(r, func(p []byte) { w.Write(p) })
}

func (w *headWriter) result() ([]byte, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf, w.total
}

// tailWriter keeps the last max bytes written in a ring.
type tailWriter struct {
	mu    sync.Mutex
	max   int
	ring  []byte
	next  int // write position in ring once full
	full  bool
	total int64
}

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total += int64(len(p))
	if w.max == 0 {
		return len(p), nil
	}
	q := p
	if len(q) > w.max {
		q = q[len(q)-w.max:]
	}
	for len(q) > 0 {
		if !w.full {
			n := min(w.max-len(w.ring), len(q))
			w.ring = append(w.ring, q[:n]...)
			q = q[n:]
			if len(w.ring) == w.max {
				w.full, w.next = true, 0
			}
			continue
		}
		n := copy(w.ring[w.next:], q)
		q = q[n:]
		w.next = (w.next + n) % w.max
	}
	return len(p), nil
}

// ReadFrom reads r to EOF as Write would receive it.
func (w *tailWriter) ReadFrom(r io.Reader) (int64, error) {
	return readAll(r, func(p []byte) { w.Write(p) })
}

func (w *tailWriter) result() ([]byte, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.full {
		return append([]byte(nil), w.ring...), w.total
	}
	out := make([]byte, 0, w.max)
	out = append(out, w.ring[w.next:]...)
	return append(out, w.ring[:w.next]...), w.total
}
