package wire_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/internal/wire"
)

// shortWriter takes 3 bytes of any write and reports no error, breaking
// the io.Writer contract as a broken peer might.
type shortWriter struct{ buf bytes.Buffer }

func (w *shortWriter) Write(p []byte) (int, error) {
	if len(p) > 3 {
		w.buf.Write(p[:3])
		return 3, nil
	}
	return w.buf.Write(p)
}

type countingWriter struct {
	bytes.Buffer
	writes int
}

func (w *countingWriter) Write(p []byte) (int, error) { w.writes++; return w.Buffer.Write(p) }

func TestWriteFramed(t *testing.T) {
	var w countingWriter
	frame := append(make([]byte, wire.HeaderBytes), "abc"...)
	if err := wire.WriteFramed(&w, frame); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]byte{0, 0, 0, 3, 'a', 'b', 'c'}, w.Bytes()); diff != "" {
		t.Errorf("frame (-want +got):\n%s", diff)
	}
	if w.writes != 1 {
		t.Errorf("%d writes, want header and body in one", w.writes)
	}
	if err := wire.WriteFramed(&shortWriter{}, append(make([]byte, wire.HeaderBytes), "abcdef"...)); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("short writer: err = %v", err)
	}
	if err := wire.WriteFramed(failWriter{}, append(make([]byte, wire.HeaderBytes), "abcdef"...)); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("failing writer: err = %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write(p []byte) (int, error) { return 0, io.ErrClosedPipe }

// TestWriteFramedNoAlloc: a frame with its header room goes out without
// allocating.
func TestWriteFramedNoAlloc(t *testing.T) {
	frame := append(make([]byte, wire.HeaderBytes), "body"...)
	if n := testing.AllocsPerRun(100, func() {
		if err := wire.WriteFramed(io.Discard, frame); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("WriteFramed allocates %v times per frame", n)
	}
}
