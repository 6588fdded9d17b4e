package bolt

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"

	bbolt "go.etcd.io/bbolt"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
)

// Record checksums (format 8).
//
// Every value the ledger stores, except the meta bucket's format stamp,
// ends with a 4-byte checksum, big-endian: the CRC-32C (Castagnoli) of
// the bucket's name, the key's length as a uvarint, the key, and the
// value before the checksum. Every read checks it before the value is
// decoded or used, the artifact bytes included: CRC-32C runs at many
// gigabytes a second where sha256 runs at a few hundred megabytes, so a
// read of a large artifact costs what it did before the checksum. The
// artifact bytes are also checked against their record's digest (sha256)
// by Check and by the upgrade that sealed them: damage after the write is
// caught on the next read by the checksum; bytes that never had their
// digest could only come from before the seal, and the upgrade refuses
// them. The key is bound into the sum, so a record whose key was damaged,
// or one moved under another key, fails just as a damaged value does. A
// lookup that finds nothing also checks the records on either side of
// where the key would be: a damaged key still sorts between its
// neighbours (the page check at Open refuses keys out of order), so a
// record whose key was changed is found as the neighbour that fails its
// sum, rather than making the lookup answer "not found". A scan checks the
// neighbour on either side of its range for the same reason. See sealed
// and lookup.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sumSize is the size of a record's checksum trailer.
const sumSize = 4

// recordSum is the checksum of the record payload stored under key in
// bucket.
func recordSum(bucket, key, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, bucket)
	c = updateUvarint(c, uint64(len(key)))
	c = crc32.Update(c, castagnoli, key)
	return crc32.Update(c, castagnoli, payload)
}

// updateUvarint is crc32.Update(c, castagnoli, the uvarint bytes of n),
// computed byte by byte from the table: a buffer on the stack passed to
// crc32.Update would escape, one allocation per record.
func updateUvarint(c uint32, n uint64) uint32 {
	c = ^c
	for ; n >= 0x80; n >>= 7 {
		c = castagnoli[byte(c)^(byte(n)|0x80)] ^ c>>8
	}
	c = castagnoli[byte(c)^byte(n)] ^ c>>8
	return ^c
}

// seal appends payload and its checksum to dst.
func seal(dst, bucket, key, payload []byte) []byte {
	dst = append(dst, payload...)
	return binary.BigEndian.AppendUint32(dst, recordSum(bucket, key, payload))
}

// sealed checks the record raw stored under key in bucket and returns its
// payload (a subslice of raw), or an error wrapping ledger.ErrCorrupt that
// names the record.
func sealed(bucket, key, raw []byte) ([]byte, error) {
	if len(raw) < sumSize {
		return nil, fmt.Errorf("ledger/bolt: bucket %q key %q: record of %d bytes has no checksum: %w", bucket, key, len(raw), ledger.ErrCorrupt)
	}
	payload := raw[:len(raw)-sumSize]
	if want, got := binary.BigEndian.Uint32(raw[len(payload):]), recordSum(bucket, key, payload); want != got {
		return nil, fmt.Errorf("ledger/bolt: bucket %q key %q: checksum mismatch (stored %08x, computed %08x): the record or its key is damaged: %w", bucket, key, want, got, ledger.ErrCorrupt)
	}
	return payload, nil
}

// lookup returns the checked payload stored under key in b (named
// bucket), or nil when there is none; on a miss it checks the records on
// either side of key (see the comment at the top).
func lookup(b *bbolt.Bucket, bucket, key []byte) ([]byte, error) {
	// One seek serves the hit and the miss (a Get and then a seek for the
	// neighbours would descend the tree twice on a miss).
	c := b.Cursor()
	k, v := c.Seek(key)
	if k != nil && bytes.Equal(k, key) {
		return sealed(bucket, k, v) // v is nil for a nested bucket: not a record
	}
	if k != nil {
		if _, err := sealed(bucket, k, v); err != nil {
			return nil, err
		}
		k, v = c.Prev()
	} else {
		k, v = c.Last()
	}
	if k != nil {
		if _, err := sealed(bucket, k, v); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// scanSealed calls fn with the key and checked payload of every record of
// b (named bucket) from start on while its key has prefix, until fn
// returns false or an error; it checks the record before start, and the
// first one past the range when the scan reaches it (see the comment at
// the top). A prefix of nil means the whole bucket from start.
func scanSealed(b *bbolt.Bucket, bucket, start, prefix []byte, fn func(k, payload []byte) (bool, error)) error {
	c := b.Cursor()
	k, v := c.Seek(start)
	if pk, pv := prevOf(c, k); pk != nil {
		if _, err := sealed(bucket, pk, pv); err != nil {
			return err
		}
		// Back to k: one step costs less than a second descent of the tree.
		k, v = c.Next()
	}
	for ; k != nil; k, v = c.Next() {
		payload, err := sealed(bucket, k, v)
		if err != nil {
			return err
		}
		if !bytes.HasPrefix(k, prefix) {
			return nil
		}
		if more, err := fn(k, payload); err != nil || !more {
			return err
		}
	}
	return nil
}

// prevOf moves c, which Seek left at k (nil: past the end), to the record
// before k.
func prevOf(c *bbolt.Cursor, k []byte) ([]byte, []byte) {
	if k == nil {
		return c.Last()
	}
	return c.Prev()
}

// checkArtifactBytes checks data, read as the bytes of artifact ref,
// against the digest its record holds.
func checkArtifactBytes(ref string, digest canon.Digest, data []byte) error {
	sum := sha256.Sum256(data)
	var want [len(canon.DigestPrefix) + 64]byte
	copy(want[:], canon.DigestPrefix)
	hex.Encode(want[len(canon.DigestPrefix):], sum[:])
	if string(digest) != string(want[:]) {
		return fmt.Errorf("ledger/bolt: bucket %q key %q: the artifact's %d bytes do not match its digest %s: %w", bucketBlobs, ref, len(data), digest, ledger.ErrCorrupt)
	}
	return nil
}

// checkSums checks the checksum of every sealed record of the file, and
// the bytes of every artifact against its record's digest: what
// Ledger.Check adds to core.CheckTx, which reads only the records it can
// reach from the operations.
func checkSums(tx *bbolt.Tx) error {
	for _, name := range sealedBuckets {
		b := tx.Bucket(name)
		if b == nil {
			return fmt.Errorf("ledger/bolt: bucket %q missing: %w", name, ledger.ErrCorrupt)
		}
		if err := b.ForEach(func(k, v []byte) error {
			_, err := sealed(name, k, v)
			return err
		}); err != nil {
			return err
		}
	}
	return checkArtifacts(tx, true)
}

// checkArtifacts checks the bytes of every artifact of tx against the
// digest its record holds; sealedBlobs says whether the bytes carry their
// checksum (format 8) or are stored bare (formats 3 to 7, during their
// upgrade).
func checkArtifacts(tx *bbolt.Tx, sealedBlobs bool) error {
	blobs, arts := tx.Bucket(bucketBlobs), tx.Bucket(bucketArtifacts)
	if blobs == nil {
		return fmt.Errorf("ledger/bolt: bucket %q missing: %w", bucketBlobs, ledger.ErrCorrupt)
	}
	return blobs.ForEach(func(k, v []byte) error {
		if sealedBlobs {
			var err error
			if v, err = sealed(bucketBlobs, k, v); err != nil {
				return err
			}
		}
		raw, err := lookup(arts, bucketArtifacts, k)
		if err != nil {
			return err
		}
		if raw == nil {
			return fmt.Errorf("ledger/bolt: bucket %q key %q: artifact bytes with no artifact record: %w", bucketBlobs, k, ledger.ErrCorrupt)
		}
		var a ledger.Artifact
		if err := json.Unmarshal(raw, &a); err != nil {
			return fmt.Errorf("ledger/bolt: bucket %q key %q: %w: %v", bucketArtifacts, k, ledger.ErrCorrupt, err)
		}
		return checkArtifactBytes(string(k), a.Digest, v)
	})
}
