package memory

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/internal/core"
)

// The store is also a core.CatTx: the catalogue's records are one map per
// kind, scanned in key order.

func (s *store) Rec(kind core.Kind, key string) ([]byte, bool, error) {
	v, ok := s.recs[kind][key]
	return bytes.Clone(v), ok, nil
}

func (s *store) PutRec(kind core.Kind, key string, v []byte) error {
	m := s.recs[kind]
	if m == nil {
		m = map[string][]byte{}
		s.recs[kind] = m
	}
	v = bytes.Clone(v)
	if v == nil {
		v = []byte{}
	}
	m[key] = v
	return nil
}

func (s *store) DelRec(kind core.Kind, key string) error {
	delete(s.recs[kind], key)
	return nil
}

func (s *store) ScanRecs(kind core.Kind, prefix string, fn func(string, []byte) bool) error {
	m := s.recs[kind]
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if !fn(k, bytes.Clone(m[k])) {
			return nil
		}
	}
	return nil
}

func (s *store) Operation(k core.OpKey) (ledger.Operation, bool, error) {
	r, ok := s.ops[k]
	return r.Op, ok, nil
}

func (s *store) Now() time.Time { return time.Now() }

// Lock does nothing: every call runs alone under the ledger's mutex.
func (s *store) Lock(core.Kind, string) error { return nil }
