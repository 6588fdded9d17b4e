package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

var sampleKey = core.OpKey{Org: "org", Project: "proj", Op: "op\x00é"}

func sampleOp() opRecord {
	return opRecord{
		OpRecord: core.OpRecord{
			Op: ledger.Operation{
				Scope: ledger.Scope{OrganizationID: "org", ProjectID: "proj"}, OperationID: "op\x00é",
				CapabilityID: "cap", RequestDigest: canon.Sum([]byte("r")), ManifestDigest: canon.Sum([]byte("m")),
				EffectBudget: 1 << 40, Deadline: time.Date(2999, 1, 2, 3, 4, 5, 6, time.UTC), State: ledger.OperationCompleted,
				CancelReason: "", EffectsUsed: 3, CurrentAttemptID: "a2", CurrentGeneration: 2,
			},
			Attempts: []ledger.Attempt{{AttemptID: "a1", Generation: 1}, {AttemptID: "a2", Generation: 2, Admitted: true}},
			Result:   &ledger.Result{DataDigest: canon.Sum([]byte("d")), ArtifactRefs: []string{"artifact_1"}, AttemptID: "a2", Generation: 2},
		},
		staged: []stagedEffect{{id: "e1", seq: 1}, {id: "e2", seq: 1 << 60}},
	}
}

func sampleEffect() ledger.Effect {
	return ledger.Effect{
		Scope: ledger.Scope{OrganizationID: "org", ProjectID: "proj"}, OperationID: "op", LogicalEffectID: "e1",
		RequestDigest: canon.Sum([]byte("e")), AuthorizationID: "auth_1", State: ledger.EffectNotConsumed,
		Reason: ledger.ReasonWaitingApproval, AttemptID: "a1", Generation: 1, Ordinal: 7,
	}
}

var cmpOpRecord = cmp.Options{cmp.AllowUnexported(opRecord{}, stagedEffect{}), cmpopts.EquateEmpty()}

func TestCodecRoundTrip(t *testing.T) {
	odd := sampleOp()
	odd.Op.RequestDigest, odd.Op.ManifestDigest = "", "sha256:NOT-HEX" // kept as strings
	empty := opRecord{OpRecord: core.OpRecord{Op: ledger.Operation{Scope: sampleKey.Scope(), OperationID: sampleKey.Op, State: ledger.OperationOpen}}}
	owned := sampleOp()
	owned.Attempts[1].ControllerID = "ctl-1"
	owned.Op.CurrentControllerID = "ctl-1"
	ownedFirst := sampleOp()
	ownedFirst.Attempts[0].ControllerID = "ctl-0" // an owned attempt taken over by StartAttempt
	for _, r := range []opRecord{sampleOp(), odd, empty, owned, ownedFirst} {
		got, err := decodeOp(sampleKey, encodeOp(nil, &r))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(r, got, cmpOpRecord); d != "" {
			t.Fatalf("operation round trip (-want +got):\n%s", d)
		}
	}
	e := sampleEffect()
	got, err := decodeEffect(encodeEffect(nil, &e))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(e, got); d != "" {
		t.Fatalf("effect round trip (-want +got):\n%s", d)
	}
}

func TestCodecRefusesDamage(t *testing.T) {
	r := sampleOp()
	raw := encodeOp(nil, &r)
	e := sampleEffect()
	rawE := encodeEffect(nil, &e)
	for name, b := range map[string][]byte{
		"truncated op":     raw[:len(raw)-1],
		"trailing op":      append(append([]byte{}, raw...), 0),
		"truncated effect": rawE[:len(rawE)/2],
		"trailing effect":  append(append([]byte{}, rawE...), 0), // an empty controller id
		"controllers of no attempt": func() []byte {
			r := opRecord{OpRecord: core.OpRecord{Op: ledger.Operation{State: ledger.OperationOpen}}}
			return append(encodeOp(nil, &r), 1, 2, 'c', '1')
		}(),
		"huge string": {0xff, 0xff, 0xff, 0xff, 0x0f},
		"empty":       {},
	} {
		_, err1 := decodeOp(sampleKey, b)
		_, err2 := decodeEffect(b)
		if !errors.Is(err1, ledger.ErrCorrupt) || !errors.Is(err2, ledger.ErrCorrupt) {
			t.Errorf("%s: errors %v, %v; want ErrCorrupt", name, err1, err2)
		}
	}
}

// FuzzDecode: the record decoders read bytes from the file, which is input:
// they never panic, and what they accept re-encodes to something they
// decode to the same record.
func FuzzDecode(f *testing.F) {
	r := sampleOp()
	f.Add(encodeOp(nil, &r))
	e := sampleEffect()
	f.Add(encodeEffect(nil, &e))
	r.Attempts[0].ControllerID = "ctl"
	f.Add(encodeOp(nil, &r))
	e.ControllerID = "ctl"
	f.Add(encodeEffect(nil, &e))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := decodeOp(sampleKey, b); err == nil {
			r2, err := decodeOp(sampleKey, encodeOp(nil, &r))
			if err != nil {
				t.Fatalf("re-encoded operation refused: %v", err)
			}
			if d := cmp.Diff(r, r2, cmpOpRecord); d != "" {
				t.Fatalf("operation changed (-first +second):\n%s", d)
			}
		}
		if e, err := decodeEffect(b); err == nil {
			e2, err := decodeEffect(encodeEffect(nil, &e))
			if err != nil {
				t.Fatalf("re-encoded effect refused: %v", err)
			}
			if d := cmp.Diff(e, e2); d != "" {
				t.Fatalf("effect changed (-first +second):\n%s", d)
			}
		}
	})
}

// TestCodecDigestForms checks that a digest is stored as 32 bytes exactly
// when canon.Digest.Validate accepts it, and that both forms round-trip.
func TestCodecDigestForms(t *testing.T) {
	good := string(canon.Sum([]byte("x")))
	h := good[len(canon.DigestPrefix):]
	for _, d := range []canon.Digest{
		canon.Digest(good),
		"",
		"sha256:",
		canon.Digest(good[:len(good)-1]),
		canon.Digest(good + "0"),
		canon.Digest("sha256:" + h[:10] + "A" + h[11:]), // uppercase
		canon.Digest("sha256:" + h[:63] + "g"),
		canon.Digest("sha256:" + h[:20] + "\x00" + h[21:]),
		canon.Digest("sha512" + good[6:]),
	} {
		var e encoder
		e.digest(d)
		if short := len(e.b) > 0 && e.b[0] == 1; short != (d.Validate() == nil) {
			t.Errorf("digest %q: 32-byte form %v, Validate says %v", d, short, d.Validate())
		}
		dec := decoder{b: e.b}
		if got := dec.digest(); got != d || dec.done("digest") != nil {
			t.Errorf("digest %q round-trips as %q (%v)", d, got, dec.err)
		}
	}
}

// TestCodecGenerationBytes: fencing generations are int64 in the API and
// stored as the uvarints format 3 has always written, so files written
// when they were uint64 read the same; a stored value above MaxInt64
// cannot come from the ledger and is corrupt.
func TestCodecGenerationBytes(t *testing.T) {
	for _, g := range []int64{1, 127, 128, 1 << 40, math.MaxInt64} {
		e := sampleEffect()
		e.Generation = g
		raw := encodeEffect(nil, &e)
		want := binary.AppendVarint(binary.AppendUvarint(nil, uint64(g)), e.Ordinal)
		if !bytes.HasSuffix(raw, want) {
			t.Fatalf("generation %d: record ends % x, want % x", g, raw[len(raw)-len(want):], want)
		}
		got, err := decodeEffect(raw)
		if err != nil || got.Generation != g {
			t.Fatalf("generation %d: decoded %d, %v", g, got.Generation, err)
		}
	}
	e := sampleEffect()
	e.Ordinal = 0
	raw := encodeEffect(nil, &e)
	// Replace the generation (1, one byte) by MaxInt64+1.
	raw = append(binary.AppendUvarint(raw[:len(raw)-2], math.MaxInt64+1), 0)
	if _, err := decodeEffect(raw); !errors.Is(err, ledger.ErrCorrupt) {
		t.Fatalf("generation 2^63: %v, want ErrCorrupt", err)
	}
}

// TestRecordSum: the checksum's length prefix, computed from the table,
// is the CRC-32C of the uvarint bytes, and a record's sum changes with
// its bucket, its key and its value.
func TestRecordSum(t *testing.T) {
	for _, n := range []int{0, 1, 127, 128, 300, 1 << 20} {
		key := bytes.Repeat([]byte{'k'}, n)
		b := binary.AppendUvarint([]byte("ops"), uint64(n))
		b = append(append(b, key...), "value"...)
		if got, want := recordSum([]byte("ops"), key, []byte("value")), crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)); got != want {
			t.Errorf("key of %d bytes: sum %08x, want %08x", n, got, want)
		}
	}
	base := recordSum([]byte("ops"), []byte("k"), []byte("v"))
	for _, other := range []uint32{recordSum([]byte("effects"), []byte("k"), []byte("v")), recordSum([]byte("ops"), []byte("K"), []byte("v")),
		recordSum([]byte("ops"), []byte("kv"), nil), recordSum([]byte("ops"), []byte("k"), []byte("w"))} {
		if other == base {
			t.Errorf("two different records share the sum %08x", base)
		}
	}
}
