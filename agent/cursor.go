package agent

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"unicode/utf8"

	"github.com/zeoruntime/runtimeipc/ledger"
)

// A cursor is the position of the last capability of a page in the search
// order (its score and id), so that the next page starts right after it
// even when capabilities were admitted or withdrawn in between: nothing
// that stayed unchanged is skipped or repeated (a capability withdrawn and
// admitted again with another description has another place in the order,
// and may be listed again). It is bound to the scope and the
// query by a fingerprint, so that a cursor of another search is refused
// rather than silently continuing a different list.
//
// Layout, base64url without padding:
//
//	version (1 byte, cursorVersion) | fingerprint (8 bytes) |
//	score (4 bytes, big endian) | capability id (the rest)
//
// A cursor carries nothing the caller has not seen: the id of the last
// capability of the page it came with. A forged cursor can only choose
// where the visible list resumes, never reveal what the scope cannot see.

const (
	cursorVersion = 1
	cursorHeader  = 1 + 8 + 4
	// maxCursorBytes bounds a cursor's text: the header and the longest
	// identifier (256 code points of at most 4 bytes), encoded.
	maxCursorBytes = (cursorHeader + 4*256 + 2) / 3 * 4
)

// cursorEncoding is strict so that one position has one cursor.
var cursorEncoding = base64.RawURLEncoding.Strict()

// position is a place in the search order: after the capability with this
// score and id.
type position struct {
	score uint32
	id    string
}

// fingerprint binds a cursor to the scope and the normalized query.
func fingerprint(scope ledger.Scope, q query) [8]byte {
	h := sha256.New()
	for _, s := range []string{"runtimeipc agent search cursor", scope.OrganizationID, scope.ProjectID, q.norm} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	var fp [8]byte
	copy(fp[:], h.Sum(nil))
	return fp
}

// encodeCursor writes position p of the search (scope, q).
func encodeCursor(scope ledger.Scope, q query, p position) string {
	b := make([]byte, 0, cursorHeader+len(p.id))
	b = append(b, cursorVersion)
	fp := fingerprint(scope, q)
	b = append(b, fp[:]...)
	b = binary.BigEndian.AppendUint32(b, p.score)
	b = append(b, p.id...)
	return cursorEncoding.EncodeToString(b)
}

// decodeCursor reads a cursor of the search (scope, q). Every refusal is
// ErrInvalidCursor with the same words whatever was wrong, so that probing
// cursors teaches nothing.
func decodeCursor(s string, scope ledger.Scope, q query) (position, error) {
	if len(s) > maxCursorBytes {
		return position{}, errBadCursor
	}
	// The decoder skips CR and LF; a cursor never holds them.
	if strings.ContainsAny(s, "\r\n") {
		return position{}, errBadCursor
	}
	b, err := cursorEncoding.DecodeString(s)
	if err != nil || len(b) <= cursorHeader || b[0] != cursorVersion {
		return position{}, errBadCursor
	}
	fp := fingerprint(scope, q)
	if !bytes.Equal(b[1:9], fp[:]) {
		return position{}, errBadCursor
	}
	id := b[cursorHeader:]
	if !utf8.Valid(id) {
		return position{}, errBadCursor
	}
	return position{score: binary.BigEndian.Uint32(b[9:13]), id: string(id)}, nil
}
