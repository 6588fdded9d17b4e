package bolt

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// Record encoding of the hot records (operations and effects), format 3.
//
// Every write of the ledger decodes and re-encodes these records inside the
// committer's transaction, which is the one serial path of the store, so
// their codec is on the critical path of every group commit: a binary
// encoding cut the apply time per write to a fraction of encoding/json's,
// and the smaller records let more operations share a page. A record is a
// sequence of fields with no tags (the file's format version names the
// layout): strings and byte counts as a uvarint length then the bytes,
// unsigned numbers as uvarints, signed ones as zigzag varints, booleans as
// one byte 0 or 1; a digest as the byte 1 then its 32 bytes when it is a
// well-formed sha256 digest (every digest the ledger accepts is), else the
// byte 0 then the string. The records leave out what their key says
// (an operation record holds no scope or operation id). Decoding is strict: a truncated field, a length past the
// end, a boolean other than 0 or 1 or trailing bytes is [ledger.ErrCorrupt],
// never a panic (FuzzDecode).

type encoder struct{ b []byte }

func (e *encoder) str(s string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *encoder) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }

// gen writes a fencing generation. Generations are int64 in the ledger's
// API but never negative, and the file has always stored them as
// uvarints: for every value >= 0 the bytes are those of the uint64 of
// the same value, so files written before the type changed read the same.
func (e *encoder) gen(g int64) { e.b = binary.AppendUvarint(e.b, uint64(g)) }

// digest checks and converts in one pass (the check is canon.Digest's
// Validate: the prefix, then exactly 64 lowercase hex digits).
func (e *encoder) digest(d canon.Digest) {
	s := string(d)
	if len(s) == len(canon.DigestPrefix)+64 && s[:len(canon.DigestPrefix)] == canon.DigestPrefix {
		var raw [33]byte
		raw[0] = 1
		h := s[len(canon.DigestPrefix):]
		bad := byte(0)
		for i := 0; i < 32; i++ {
			hi, lo := unhex[h[2*i]], unhex[h[2*i+1]]
			bad |= hi | lo
			raw[1+i] = hi<<4 | lo&0xf
		}
		if bad&0x10 == 0 {
			e.b = append(e.b, raw[:]...)
			return
		}
	}
	e.b = append(e.b, 0)
	e.str(s)
}

// unhex maps a lowercase hex digit to its value and every other byte to
// 0x10.
var unhex = func() (t [256]byte) {
	for i := range t {
		t[i] = 0x10
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = byte(c - '0')
	}
	for c := 'a'; c <= 'f'; c++ {
		t[c] = byte(c - 'a' + 10)
	}
	return t
}()

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, args...)
	}
}

func (d *decoder) uint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	return d.varint(v, n, "uvarint")
}

func (d *decoder) int() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	return int64(d.varint(uint64(v), n, "varint"))
}

// gen reads a fencing generation written by encoder.gen; one above
// MaxInt64 cannot have been written by the ledger and is corrupt.
func (d *decoder) gen() int64 {
	v := d.uint()
	if v > math.MaxInt64 {
		d.fail("fencing generation %d out of range", v)
		return 0
	}
	return int64(v)
}

// varint consumes the n bytes of a decoded varint of value v, or fails
// when binary.Uvarint or Varint reported it truncated or overlong.
func (d *decoder) varint(v uint64, n int, kind string) uint64 {
	if n <= 0 {
		d.fail("truncated or overlong %s", kind)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// str copies the string out: the input is bbolt's memory, valid only for
// the transaction.
func (d *decoder) str() string {
	n := d.uint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.fail("string of %d bytes with %d left", n, len(d.b))
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) digest() canon.Digest {
	if d.err != nil {
		return ""
	}
	switch {
	case len(d.b) > 0 && d.b[0] == 0:
		d.b = d.b[1:]
		return canon.Digest(d.str())
	case len(d.b) > 32 && d.b[0] == 1:
		var buf [len(canon.DigestPrefix) + 64]byte
		copy(buf[:], canon.DigestPrefix)
		hex.Encode(buf[len(canon.DigestPrefix):], d.b[1:33])
		d.b = d.b[33:]
		return canon.Digest(buf[:])
	}
	d.fail("bad digest")
	return ""
}

func (d *decoder) bool() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) == 0 || d.b[0] > 1 {
		d.fail("bad boolean")
		return false
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v
}

// count reads the length of a list whose elements take at least min bytes
// each, and refuses a length the remaining bytes cannot hold, so a corrupt
// length never makes us allocate.
func (d *decoder) count(min int) int {
	n := d.uint()
	if d.err != nil {
		return 0
	}
	if n > uint64(len(d.b)/min) {
		d.fail("list of %d elements with %d bytes left", n, len(d.b))
		return 0
	}
	return int(n)
}

// done reports the first error, or trailing bytes, wrapped in ErrCorrupt.
func (d *decoder) done(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return fmt.Errorf("ledger/bolt: %s record: %w: %v", what, ledger.ErrCorrupt, d.err)
	}
	return nil
}

// stagedEffect is an entry of an operation's staged effect index: the
// sequence number of one of its effects not yet in the effidx bucket (see
// store.go).
type stagedEffect struct {
	id  string
	seq uint64
}

// opRecord is the stored form of an operation: core's record and the
// operation's staged effect index.
type opRecord struct {
	core.OpRecord
	staged []stagedEffect
	dirty  bool // changed in the transaction and not yet flushed (store.go); not stored
}

// Operation record fields, in order: capability, request digest, manifest digest, budget, deadline (a boolean
// "set", then Unix seconds and nanoseconds), state, cancel reason, effects
// used, current attempt id, current generation; the attempts (count, then
// id, generation, admitted); the result (a boolean "present", then data
// digest, refs (count, then each), attempt id, generation); the staged
// effects (count, then id, sequence); then, only when some attempt has a
// controller (format 6), the attempts' controller ids (count, which is the
// number of attempts, then each). The operation's current controller is
// its current (last) attempt's, so it is not stored.
func encodeOp(b []byte, r *opRecord) []byte {
	e := encoder{b}
	o := &r.Op
	e.str(o.CapabilityID)
	e.digest(o.RequestDigest)
	e.digest(o.ManifestDigest)
	e.int(o.EffectBudget)
	e.bool(!o.Deadline.IsZero())
	if !o.Deadline.IsZero() {
		e.int(o.Deadline.Unix())
		e.uint(uint64(o.Deadline.Nanosecond()))
	}
	e.str(string(o.State))
	e.str(o.CancelReason)
	e.int(o.EffectsUsed)
	e.str(o.CurrentAttemptID)
	e.gen(o.CurrentGeneration)
	e.uint(uint64(len(r.Attempts)))
	for _, a := range r.Attempts {
		e.str(a.AttemptID)
		e.gen(a.Generation)
		e.bool(a.Admitted)
	}
	e.bool(r.Result != nil)
	if res := r.Result; res != nil {
		e.digest(res.DataDigest)
		e.uint(uint64(len(res.ArtifactRefs)))
		for _, ref := range res.ArtifactRefs {
			e.str(ref)
		}
		e.str(res.AttemptID)
		e.gen(res.Generation)
	}
	e.uint(uint64(len(r.staged)))
	for _, s := range r.staged {
		e.str(s.id)
		e.uint(s.seq)
	}
	for _, a := range r.Attempts {
		if a.ControllerID != "" {
			e.uint(uint64(len(r.Attempts)))
			for _, a := range r.Attempts {
				e.str(a.ControllerID)
			}
			break
		}
	}
	return e.b
}

// decodeOp decodes the record stored under operation key k.
func decodeOp(k core.OpKey, raw []byte) (opRecord, error) {
	d := decoder{b: raw}
	var r opRecord
	o := &r.Op
	o.Scope, o.OperationID = k.Scope(), k.Op
	o.CapabilityID = d.str()
	o.RequestDigest = d.digest()
	o.ManifestDigest = d.digest()
	o.EffectBudget = d.int()
	if d.bool() {
		sec, nsec := d.int(), d.uint()
		if nsec >= 1e9 {
			d.fail("deadline nanoseconds %d", nsec)
		}
		o.Deadline = time.Unix(sec, int64(nsec)).UTC()
	}
	o.State = ledger.OperationState(d.str())
	o.CancelReason = d.str()
	o.EffectsUsed = d.int()
	o.CurrentAttemptID = d.str()
	o.CurrentGeneration = d.gen()
	if n := d.count(3); n > 0 {
		r.Attempts = make([]ledger.Attempt, n)
		for i := range r.Attempts {
			a := &r.Attempts[i]
			a.AttemptID = d.str()
			a.Generation = d.gen()
			a.Admitted = d.bool()
		}
	}
	if d.bool() {
		res := &ledger.Result{}
		res.DataDigest = d.digest()
		if n := d.count(1); n > 0 {
			res.ArtifactRefs = make([]string, n)
			for i := range res.ArtifactRefs {
				res.ArtifactRefs[i] = d.str()
			}
		}
		res.AttemptID = d.str()
		res.Generation = d.gen()
		r.Result = res
	}
	if n := d.count(2); n > 0 {
		r.staged = make([]stagedEffect, n)
		for i := range r.staged {
			r.staged[i].id = d.str()
			r.staged[i].seq = d.uint()
		}
	}
	if len(d.b) > 0 && d.err == nil {
		named := false
		if n := d.count(1); n != len(r.Attempts) {
			d.fail("%d attempt controllers for %d attempts", n, len(r.Attempts))
		}
		for i := range r.Attempts {
			r.Attempts[i].ControllerID = d.str()
			named = named || r.Attempts[i].ControllerID != ""
		}
		if !named {
			d.fail("attempt controllers recorded, all empty")
		}
	}
	if n := len(r.Attempts); n > 0 {
		o.CurrentControllerID = r.Attempts[n-1].ControllerID
	}
	return r, d.done("operation")
}

// Effect record fields, in order: organization, project, operation,
// logical effect id, request digest, authorization id, state, receipt,
// reason, attempt id, generation, ordinal; then, only when the effect has
// one (format 6), its controller id.
func encodeEffect(b []byte, x *ledger.Effect) []byte {
	e := encoder{b}
	e.str(x.Scope.OrganizationID)
	e.str(x.Scope.ProjectID)
	e.str(x.OperationID)
	e.str(x.LogicalEffectID)
	e.digest(x.RequestDigest)
	e.str(x.AuthorizationID)
	e.str(string(x.State))
	e.str(x.ReceiptID)
	e.str(string(x.Reason))
	e.str(x.AttemptID)
	e.gen(x.Generation)
	e.int(x.Ordinal)
	if x.ControllerID != "" {
		e.str(x.ControllerID)
	}
	return e.b
}

func decodeEffect(raw []byte) (ledger.Effect, error) {
	d := decoder{b: raw}
	var x ledger.Effect
	x.Scope.OrganizationID = d.str()
	x.Scope.ProjectID = d.str()
	x.OperationID = d.str()
	x.LogicalEffectID = d.str()
	x.RequestDigest = d.digest()
	x.AuthorizationID = d.str()
	x.State = ledger.EffectState(d.str())
	x.ReceiptID = d.str()
	x.Reason = ledger.NotConsumedReason(d.str())
	x.AttemptID = d.str()
	x.Generation = d.gen()
	x.Ordinal = d.int()
	if len(d.b) > 0 && d.err == nil {
		if x.ControllerID = d.str(); x.ControllerID == "" {
			d.fail("empty controller id")
		}
	}
	return x, d.done("effect")
}
