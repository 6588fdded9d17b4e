package ipc_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"runtime"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeoruntime/runtimeipc/ipc"
)

func frameBytes(body []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(out, body...)
}

func TestReadFrame(t *testing.T) {
	hdr := func(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }
	tests := []struct {
		name    string
		in      []byte
		max     int
		want    []byte
		wantErr error
	}{
		{"one byte", frameBytes([]byte("x")), 0, []byte("x"), nil},
		{"exactly max", frameBytes(bytes.Repeat([]byte("a"), 1024)), 1024, bytes.Repeat([]byte("a"), 1024), nil},
		{"one over max", frameBytes(bytes.Repeat([]byte("a"), 1025)), 1024, nil, ipc.ErrFrameTooLarge},
		{"zero length", hdr(0), 0, nil, ipc.ErrEmptyFrame},
		{"4 GiB", hdr(0xFFFFFFFF), 0, nil, ipc.ErrFrameTooLarge},
		{"1 MiB + 1 with max above the protocol limit", hdr(ipc.MaxMessageBytes + 1), 1 << 30, nil, ipc.ErrFrameTooLarge},
		{"1 MiB with default max", append(hdr(ipc.MaxMessageBytes), make([]byte, ipc.MaxMessageBytes)...), 0, make([]byte, ipc.MaxMessageBytes), nil},
		{"empty stream", nil, 0, nil, io.EOF},
		{"header cut", []byte{0, 0}, 0, nil, io.ErrUnexpectedEOF},
		{"body cut", append(hdr(10), "abc"...), 0, nil, io.ErrUnexpectedEOF},
		{"header only", hdr(10), 0, nil, io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []struct {
				name string
				r    io.Reader
			}{{"whole", bytes.NewReader(tt.in)}, {"byte by byte", iotest.OneByteReader(bytes.NewReader(tt.in))}} {
				got, err := ipc.ReadFrame(r.r, tt.max)
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
					t.Fatalf("%s: err = %v, want %v", r.name, err, tt.wantErr)
				}
				if !bytes.Equal(got, tt.want) {
					t.Errorf("%s: got %d bytes, want %d", r.name, len(got), len(tt.want))
				}
				var fse *ipc.FrameSizeError
				if errors.Is(tt.wantErr, ipc.ErrFrameTooLarge) && !errors.As(err, &fse) {
					t.Errorf("%s: error %T is not a *FrameSizeError", r.name, err)
				}
			}
		})
	}
}

// TestReadFrameFresh checks that the returned slice is the caller's.
func TestReadFrameFresh(t *testing.T) {
	src := frameBytes([]byte("hello"))
	got, err := ipc.ReadFrame(bytes.NewReader(src), 0)
	if err != nil {
		t.Fatal(err)
	}
	src[4] = 'X'
	if string(got) != "hello" {
		t.Fatalf("body aliases the reader's bytes: %q", got)
	}
}

// TestReadFrameHugeHeaderNoAlloc: a 0xFFFFFFFF header is refused without
// allocating anything near its size.
func TestReadFrameHugeHeaderNoAlloc(t *testing.T) {
	hdr := []byte{0xFF, 0xFF, 0xFF, 0xFF}
	r := bytes.NewReader(hdr)
	allocs := testing.AllocsPerRun(100, func() {
		r.Reset(hdr)
		if _, err := ipc.ReadFrame(r, ipc.MaxMessageBytes); !errors.Is(err, ipc.ErrFrameTooLarge) {
			t.Fatal(err)
		}
	})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		r.Reset(hdr)
		_, _ = ipc.ReadFrame(r, ipc.MaxMessageBytes)
	}
	runtime.ReadMemStats(&after)
	perCall := (after.TotalAlloc - before.TotalAlloc) / 100
	t.Logf("4 GiB header: %.0f allocations, %d bytes per call", allocs, perCall)
	if allocs > 2 || perCall > 256 {
		t.Fatalf("refusing a 4 GiB header allocated %.0f times, %d bytes per call", allocs, perCall)
	}
}

// TestReadFrameHugeHeaderSocket sends the 4 GiB header over a real socket.
func TestReadFrameHugeHeaderSocket(t *testing.T) {
	a, b := socketpair(t)
	if _, err := b.Write([]byte{0xFF, 0xFF, 0xFF, 0xFF, 'x'}); err != nil {
		t.Fatal(err)
	}
	_, err := ipc.ReadFrame(a, 0)
	var fse *ipc.FrameSizeError
	if !errors.As(err, &fse) || fse.Length != 0xFFFFFFFF || fse.Max != ipc.MaxMessageBytes {
		t.Fatalf("err = %v", err)
	}
}

func TestReadFrameDeadline(t *testing.T) {
	a, b := socketpair(t)
	if _, err := b.Write([]byte{0, 0, 0, 9, 'a'}); err != nil {
		t.Fatal(err)
	}
	if err := a.SetReadDeadline(time.Now().Add(30 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err := ipc.ReadFrame(a, 0)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
}

type shortWriter struct{ buf bytes.Buffer }

func (w *shortWriter) Write(p []byte) (int, error) {
	if len(p) > 3 {
		w.buf.Write(p[:3])
		return 3, nil // breaks the io.Writer contract: short count, no error
	}
	return w.buf.Write(p)
}

type errWriter struct{}

func (errWriter) Write(p []byte) (int, error) { return 0, io.ErrClosedPipe }

// writers are the ways to write a frame, so that one table tests them all.
var writers = []struct {
	name  string
	write func(w io.Writer, body []byte, max int) error
}{
	{"WriteFrame", ipc.WriteFrame},
}

func TestWriteFrame(t *testing.T) {
	for _, wr := range writers {
		var buf bytes.Buffer
		if err := wr.write(&buf, []byte("abc"), 0); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]byte{0, 0, 0, 3, 'a', 'b', 'c'}, buf.Bytes()); diff != "" {
			t.Errorf("%s: %s", wr.name, diff)
		}
		for _, tt := range []struct {
			name string
			body []byte
			max  int
			want error
		}{
			{"empty", nil, 0, ipc.ErrEmptyFrame},
			{"over max", make([]byte, 1025), 1024, ipc.ErrFrameTooLarge},
			{"over protocol limit", make([]byte, ipc.MaxMessageBytes+1), 1 << 30, ipc.ErrFrameTooLarge},
		} {
			var w bytes.Buffer
			if err := wr.write(&w, tt.body, tt.max); !errors.Is(err, tt.want) || w.Len() != 0 {
				t.Errorf("%s %s: err = %v, wrote %d bytes", wr.name, tt.name, err, w.Len())
			}
		}
		if err := wr.write(&shortWriter{}, []byte("abcdef"), 0); !errors.Is(err, io.ErrShortWrite) {
			t.Errorf("%s short writer: err = %v", wr.name, err)
		}
		if err := wr.write(errWriter{}, []byte("abcdef"), 0); !errors.Is(err, io.ErrClosedPipe) {
			t.Errorf("%s failing writer: err = %v", wr.name, err)
		}
	}
}

// TestFrameRoundTripSocket moves frames of several sizes over a real
// socketpair, larger than the socket buffer so that writes and reads are
// partial.
func TestFrameRoundTripSocket(t *testing.T) {
	a, b := socketpair(t)
	sizes := []int{1, 1023, 4096, 65537, ipc.MaxMessageBytes}
	go func() {
		for _, wr := range writers {
			for _, n := range sizes {
				body := bytes.Repeat([]byte{byte(n)}, n)
				if err := wr.write(b, body, 0); err != nil {
					t.Error(wr.name, err)
					return
				}
			}
		}
		b.Close()
	}()
	for range writers {
		for _, n := range sizes {
			got, err := ipc.ReadFrame(a, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, bytes.Repeat([]byte{byte(n)}, n)) {
				t.Fatalf("frame of %d bytes corrupted", n)
			}
		}
	}
	if _, err := ipc.ReadFrame(a, 0); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}
