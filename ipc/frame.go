package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/zeoruntime/runtimeipc/internal/wire"
)

const (
	// MaxMessageBytes is the largest frame body the protocol allows in either
	// direction: 1 MiB (doc/protocol.md, “Frames”;
	// LaunchContext.max_message_bytes upper bound and default). ReadFrame and
	// WriteFrame never accept more, whatever limit they are given.
	MaxMessageBytes = 1 << 20
	// MinMessageBytes is the smallest max_message_bytes a LaunchContext may
	// name (doc/protocol.md, “Launch context”).
	MinMessageBytes = 1024
)

// effectiveMax maps a caller's limit to the one enforced: max ≤ 0 means
// MaxMessageBytes, and nothing above MaxMessageBytes is ever honoured, so
// that no frame can make the codec allocate more than 1 MiB.
func effectiveMax(max int) int {
	if max <= 0 || max > MaxMessageBytes {
		return MaxMessageBytes
	}
	return max
}

// ReadFrame reads one frame from r: a 4-byte big-endian length, then that
// many body bytes, and returns the body in a freshly allocated slice that the
// caller owns.
//
// The length is checked before anything is allocated: zero is refused with a
// *FrameSizeError wrapping ErrEmptyFrame, and a length over max with one
// wrapping ErrFrameTooLarge (so a 4 GiB header costs no memory). max ≤ 0
// means MaxMessageBytes, and a max above MaxMessageBytes is lowered to it.
//
// Like io.ReadFull, ReadFrame returns io.EOF only if r ended before the first
// header byte, and io.ErrUnexpectedEOF if it ended inside the header or the
// body. Short reads are retried until the frame is complete; an error from r
// (for example a net.Conn deadline, which wraps os.ErrDeadlineExceeded) is
// returned wrapped with the step that failed. ReadFrame does not set
// deadlines itself: the caller bounds the whole read by setting one on r.
func ReadFrame(r io.Reader, max int) ([]byte, error) {
	var hdr [wire.HeaderBytes]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, err
		}
		return nil, fmt.Errorf("ipc: reading frame header: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if err := checkLength(uint64(n), max); err != nil {
		return nil, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, err
		}
		return nil, fmt.Errorf("ipc: reading %d-byte frame body: %w", n, err)
	}
	return body, nil
}

func checkLength(n uint64, max int) error {
	max = effectiveMax(max)
	if n == 0 {
		return &FrameSizeError{Length: 0, Max: max, Err: ErrEmptyFrame}
	}
	if n > uint64(max) {
		return &FrameSizeError{Length: n, Max: max, Err: ErrFrameTooLarge}
	}
	return nil
}

// WriteFrame writes body to w as one frame: its length as a big-endian
// uint32, then the bytes. An empty body, or one longer than max (max ≤ 0
// means MaxMessageBytes; a larger max is lowered to it), is refused with a
// *FrameSizeError before anything is written.
//
// On a net.Conn the header and body go out in one writev call; on other
// writers in two Write calls. A short write is an error (io.ErrShortWrite if
// w reported none), and the stream is then unusable: part of a frame may
// have been sent. WriteFrame does not retain body.
func WriteFrame(w io.Writer, body []byte, max int) error {
	if err := checkLength(uint64(len(body)), max); err != nil {
		return err
	}
	var hdr [wire.HeaderBytes]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(body)))
	bufs := net.Buffers{hdr[:], body}
	want := int64(wire.HeaderBytes + len(body))
	n, err := bufs.WriteTo(w)
	if err == nil && n != want {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("ipc: writing %d-byte frame (%d of %d bytes written): %w", len(body), n, want, err)
	}
	return nil
}
