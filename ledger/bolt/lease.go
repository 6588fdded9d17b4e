package bolt

import (
	"encoding/json"
	"fmt"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// Controller leases live in the leases bucket, one JSON core.LeaseRecord
// per controller id. A renewal is a write like any other: group-committed
// and fsynced before it is acknowledged.
//
// The file's exclusive flock proves that no other process has the file
// open, so a lease in it that was not acquired through this open handle
// belongs to a process that has lost the file, dead or not: it cannot act
// on this ledger any more. Each Open names its handle (Ledger.holder) and
// records that name in the leases it acquires; core judges a lease with
// another name not live, with no wait for its TTL after a restart. The
// record itself is kept (Leases reports it with Live false), and its id
// stays used: ids are never reused.
//
// Every new effect of an owned attempt reads its controller's lease, and
// a group commit carries many of them for the same few controllers, so a
// transaction remembers the records it read or wrote (boltTx.leases,
// cleared with the rest of its memo when the transaction ends).

func (t *boltTx) Lease(id string) (core.LeaseRecord, bool, error) {
	if r, ok := t.leases[id]; ok {
		return r, true, nil
	}
	r, ok, err := get[core.LeaseRecord](t, bucketLeases, []byte(id))
	if err != nil || !ok {
		return r, ok, err
	}
	if r.ControllerID != id {
		return core.LeaseRecord{}, false, misfiled(id, r)
	}
	if t.leases == nil {
		t.leases = map[string]core.LeaseRecord{}
	}
	t.leases[id] = r
	return r, true, nil
}

func (t *boltTx) PutLease(r core.LeaseRecord) error {
	if err := put(t, bucketLeases, t.hold([]byte(r.ControllerID)), r); err != nil {
		return err
	}
	if t.leases == nil {
		t.leases = map[string]core.LeaseRecord{}
	}
	t.leases[r.ControllerID] = r
	return nil
}

// Leases reads every lease record, checking that each is filed under its
// own controller id (the bucket's key order is then controller id order).
func (t *boltTx) Leases() ([]core.LeaseRecord, error) {
	b, err := t.bucket(bucketLeases)
	if err != nil {
		return nil, err
	}
	out := []core.LeaseRecord{}
	err = b.ForEach(func(k, v []byte) error {
		raw, err := sealed(bucketLeases, k, v)
		if err != nil {
			return err
		}
		var r core.LeaseRecord
		if err := json.Unmarshal(raw, &r); err != nil {
			return fmt.Errorf("ledger/bolt: bucket %q key %q: %w: %v", bucketLeases, k, ledger.ErrCorrupt, err)
		}
		if r.ControllerID != string(k) {
			return misfiled(string(k), r)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

func misfiled(key string, r core.LeaseRecord) error {
	return fmt.Errorf("ledger/bolt: the lease record under %q names controller %q: %w", key, r.ControllerID, ledger.ErrCorrupt)
}

func (t *boltTx) Holder() string { return t.holder }
