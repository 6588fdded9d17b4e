package wasm

import (
	"bytes"
	"testing"
)

// CheckMergedData rewrites code as Start does before compiling, checks
// that the memory image and every other section are unchanged, and
// reports the number of data segments before and after.
func CheckMergedData(t *testing.T, code []byte) (before, after int) {
	t.Helper()
	out := mergeDataSegments(code)
	checkMerge(t, code, out)
	count := func(code []byte) int {
		for _, s := range sections(code) {
			if s[0][0] == sectionData {
				segs, _ := parseDataSection(s[1])
				return len(segs)
			}
		}
		return 0
	}
	if bytes.Equal(out, code) {
		return count(code), count(code)
	}
	return count(code), count(out)
}

// PooledMemories is how many freed linear memories b keeps for reuse.
func PooledMemories(b *Backend) int { return b.mem.pooled() }
