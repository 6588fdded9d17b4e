package launch

import "sync"

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
