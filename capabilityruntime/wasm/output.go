package wasm

import (
	"bytes"
	"errors"
	"sync"

	"github.com/zeoruntime/runtimeipc/capabilityruntime"
)

// errOverflow is what the module's fd_write gets once stdout is full (as
// EIO); the call is being stopped by then.
var errOverflow = errors.New("wasm: output limit reached")

// limitBuffer collects at most max bytes of stdout. The first write past
// that calls over, which stops the call: a module that ignores write errors
// would otherwise run to its deadline.
type limitBuffer struct {
	mu   sync.Mutex // guards buf and hit
	max  int
	buf  bytes.Buffer
	over func()
	hit  bool
}

func (l *limitBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - l.buf.Len(); len(p) > room {
		l.buf.Write(p[:max(room, 0)])
		if !l.hit {
			l.hit = true
			l.over()
		}
		return max(room, 0), errOverflow
	}
	return l.buf.Write(p)
}

func (l *limitBuffer) overflowed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hit
}

func (l *limitBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Bytes()
}

// headBytes is how much of the start of stderr a CallError keeps when the
// stream is longer than its tail: a Go module's fatal error is stated first,
// before the goroutine dump that fills the tail.
const headBytes = 1 << 10

// tailBuffer keeps the first headBytes and the last max bytes written to
// it, in at most headBytes+2×max: a module that floods stderr costs no more
// memory than that.
type tailBuffer struct {
	mu    sync.Mutex // guards the fields below
	max   int
	head  []byte
	total int64
	buf   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	t.total += int64(n)
	if room := headBytes - len(t.head); room > 0 {
		t.head = append(t.head, p[:min(room, len(p))]...)
	}
	if len(p) > t.max {
		p = p[len(p)-t.max:]
	}
	if len(t.buf)+len(p) > 2*t.max {
		keep := t.max - len(p)
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-keep:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// String returns the tail, at most max bytes.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf[max(len(t.buf)-t.max, 0):])
}

// Head returns the first headBytes when the stream was longer than the
// tail, else "" (the tail then holds all of it).
func (t *tailBuffer) Head() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.total <= int64(t.max) {
		return ""
	}
	return string(t.head)
}

// parseResponse decodes the runtime's untrusted stdout
// (capabilityruntime.ParseResponse).
func parseResponse(b []byte) (*capabilityruntime.Response, error) {
	return capabilityruntime.ParseResponse(b)
}
