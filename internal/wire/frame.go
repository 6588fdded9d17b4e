package wire

import (
	"encoding/binary"
	"fmt"
	"io"
)

// HeaderBytes is the size of a frame header: the body length as a
// big-endian uint32.
const HeaderBytes = 4

// WriteFramed writes frame[HeaderBytes:] as one frame, first filling
// frame[:HeaderBytes] with its length. A caller that builds its body after
// HeaderBytes reserved bytes thus sends header and body in one Write, with
// no copy and no allocation. It does not check the body against any limit:
// the caller has, and len(frame) must exceed HeaderBytes. A short write is
// an error (io.ErrShortWrite if w reported none); the stream is then
// unusable.
func WriteFramed(w io.Writer, frame []byte) error {
	body := len(frame) - HeaderBytes
	binary.BigEndian.PutUint32(frame, uint32(body))
	n, err := w.Write(frame)
	if err == nil && n != len(frame) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return fmt.Errorf("writing %d-byte frame (%d of %d bytes written): %w", body, n, len(frame), err)
	}
	return nil
}
