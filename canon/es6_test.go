package canon_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/longtest"
)

// es6Sequence yields the deterministic float64 test sequence described in
// the README of cyberphone/json-canonicalization's testdata (RFC 8785's
// author): first a fixed list of edge-case bit patterns, then the 2000
// values just above the smallest normal (0x0010000000000000+i), then an
// endless stream cut from a SHA-256 hash chain that starts at 32 zero bytes.
// Each 32-byte digest gives four little-endian float64 values; zeros, NaNs
// and infinities are skipped.
type es6Sequence struct {
	n     int
	chain [sha256.Size]byte
	left  []byte // unread bytes of chain
}

// es6Static is the fixed prefix of the sequence, bit patterns as listed in
// that README (duplicates included: they are part of the hashed stream).
var es6Static = [...]uint64{
	0x0000000000000000, 0x8000000000000000, 0x0000000000000001, 0x8000000000000001,
	0xc46696695dbd1cc3, 0xc43211ede4974a35, 0xc3fce97ca0f21056, 0xc3c7213080c1a6ac,
	0xc39280f39a348556, 0xc35d9b1f5d20d557, 0xc327af4c4a80aaac, 0xc2f2f2a36ecd5556,
	0xc2be51057e155558, 0xc28840d131aaaaac, 0xc253670dc1555557, 0xc21f0b4935555557,
	0xc1e8d5d42aaaaaac, 0xc1b3de4355555556, 0xc17fca0555555556, 0xc1496e6aaaaaaaab,
	0xc114585555555555, 0xc0e046aaaaaaaaab, 0xc0aa0aaaaaaaaaaa, 0xc074d55555555555,
	0xc040aaaaaaaaaaab, 0xc00aaaaaaaaaaaab, 0xbfd5555555555555, 0xbfa1111111111111,
	0xbf6b4e81b4e81b4f, 0xbf35d867c3ece2a5, 0xbf0179ec9cbd821e, 0xbecbf647612f3696,
	0xbe965e9f80f29212, 0xbe61e54c672874db, 0xbe2ca213d840baf8, 0xbdf6e80fe033c8c6,
	0xbdc2533fe68fd3d2, 0xbd8d51ffd74c861c, 0xbd5774ccac3d3817, 0xbd22c3d6f030f9ac,
	0xbcee0624b3818f79, 0xbcb804ea293472c7, 0xbc833721ba905bd3, 0xbc4ebe9c5db3c61e,
	0xbc18987d17c304e5, 0xbbe3ad30dfcf371d, 0xbbaf7b816618582f, 0xbb792f9ab81379bf,
	0xbb442615600f9499, 0xbb101e77800c76e1, 0xbad9ca58cce0be35, 0xbaa4a1e0a3e6fe90,
	0xba708180831f320d, 0xba3a68cd9e985016, 0x446696695dbd1cc3, 0x443211ede4974a35,
	0x43fce97ca0f21056, 0x43c7213080c1a6ac, 0x439280f39a348556, 0x435d9b1f5d20d557,
	0x4327af4c4a80aaac, 0x42f2f2a36ecd5556, 0x42be51057e155558, 0x428840d131aaaaac,
	0x4253670dc1555557, 0x421f0b4935555557, 0x41e8d5d42aaaaaac, 0x41b3de4355555556,
	0x417fca0555555556, 0x41496e6aaaaaaaab, 0x4114585555555555, 0x40e046aaaaaaaaab,
	0x40aa0aaaaaaaaaaa, 0x4074d55555555555, 0x4040aaaaaaaaaaab, 0x400aaaaaaaaaaaab,
	0x3fd5555555555555, 0x3fa1111111111111, 0x3f6b4e81b4e81b4f, 0x3f35d867c3ece2a5,
	0x3f0179ec9cbd821e, 0x3ecbf647612f3696, 0x3e965e9f80f29212, 0x3e61e54c672874db,
	0x3e2ca213d840baf8, 0x3df6e80fe033c8c6, 0x3dc2533fe68fd3d2, 0x3d8d51ffd74c861c,
	0x3d5774ccac3d3817, 0x3d22c3d6f030f9ac, 0x3cee0624b3818f79, 0x3cb804ea293472c7,
	0x3c833721ba905bd3, 0x3c4ebe9c5db3c61e, 0x3c18987d17c304e5, 0x3be3ad30dfcf371d,
	0x3baf7b816618582f, 0x3b792f9ab81379bf, 0x3b442615600f9499, 0x3b101e77800c76e1,
	0x3ad9ca58cce0be35, 0x3aa4a1e0a3e6fe90, 0x3a708180831f320d, 0x3a3a68cd9e985016,
	0x4024000000000000, 0x4014000000000000, 0x3fe0000000000000, 0x3fa999999999999a,
	0x3f747ae147ae147b, 0x3f40624dd2f1a9fc, 0x3f0a36e2eb1c432d, 0x3ed4f8b588e368f1,
	0x3ea0c6f7a0b5ed8d, 0x3e6ad7f29abcaf48, 0x3e35798ee2308c3a, 0x3ed539223589fa95,
	0x3ed4ff26cd5a7781, 0x3ed4f95a762283ff, 0x3ed4f8c60703520c, 0x3ed4f8b72f19cd0d,
	0x3ed4f8b5b31c0c8d, 0x3ed4f8b58d1c461a, 0x3ed4f8b5894f7f0e, 0x3ed4f8b588ee37f3,
	0x3ed4f8b588e47da4, 0x3ed4f8b588e3849c, 0x3ed4f8b588e36bb5, 0x3ed4f8b588e36937,
	0x3ed4f8b588e368f8, 0x3ed4f8b588e368f1, 0x3ff0000000000000, 0xbff0000000000000,
	0xbfeffffffffffffa, 0xbfeffffffffffffb, 0x3feffffffffffffa, 0x3feffffffffffffb,
	0x3feffffffffffffc, 0x3feffffffffffffe, 0xbfefffffffffffff, 0xbfefffffffffffff,
	0x3fefffffffffffff, 0x3fefffffffffffff, 0x3fd3333333333332, 0x3fd3333333333333,
	0x3fd3333333333334, 0x0010000000000000, 0x000ffffffffffffd, 0x000fffffffffffff,
	0x7fefffffffffffff, 0xffefffffffffffff, 0x4340000000000000, 0xc340000000000000,
	0x4430000000000000, 0x44b52d02c7e14af5, 0x44b52d02c7e14af6, 0x44b52d02c7e14af7,
	0x444b1ae4d6e2ef4e, 0x444b1ae4d6e2ef4f, 0x444b1ae4d6e2ef50, 0x3eb0c6f7a0b5ed8c,
	0x3eb0c6f7a0b5ed8d, 0x41b3de4355555553, 0x41b3de4355555554, 0x41b3de4355555555,
	0x41b3de4355555556, 0x41b3de4355555557, 0xbecbf647612f3696, 0x43143ff3c1cb0959,
}

const es6Serial = 2000

// next returns the bit pattern of the next value.
func (s *es6Sequence) next() uint64 {
	i := s.n
	s.n++
	switch {
	case i < len(es6Static):
		return es6Static[i]
	case i < len(es6Static)+es6Serial:
		return 0x0010000000000000 + uint64(i-len(es6Static))
	}
	for {
		if len(s.left) == 0 {
			s.chain = sha256.Sum256(s.chain[:])
			s.left = s.chain[:]
		}
		bits := binary.LittleEndian.Uint64(s.left)
		s.left = s.left[8:]
		if f := math.Float64frombits(bits); f != 0 && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return bits
		}
	}
}

// es6Hash formats the first n values of the sequence as "hex,expected\n"
// lines, hex being the bit pattern in lowercase without leading zeros and
// expected our canon.AppendFloat form, and returns the SHA-256 of the lines
// and their total size.
func es6Hash(t testing.TB, n int) (string, int64) {
	var (
		seq  es6Sequence
		h    hash.Hash = sha256.New()
		buf            = make([]byte, 0, 64<<10)
		size int64
		err  error
	)
	for range n {
		bits := seq.next()
		buf = strconv.AppendUint(buf, bits, 16)
		buf = append(buf, ',')
		if buf, err = canon.AppendFloat(buf, math.Float64frombits(bits)); err != nil {
			t.Fatalf("AppendFloat(%#x): %v", bits, err)
		}
		buf = append(buf, '\n')
		if len(buf) > cap(buf)-64 {
			h.Write(buf)
			size += int64(len(buf))
			buf = buf[:0]
		}
	}
	h.Write(buf)
	size += int64(len(buf))
	return hex.EncodeToString(h.Sum(nil)), size
}

// es6Table holds the SHA-256 of the first N lines and their size, from the
// table in cyberphone's testdata README.
var es6Table = map[int]struct {
	sum  string
	size int64
}{
	1000:      {"be18b62b6f69cdab33a7e0dae0d9cfa869fda80ddc712221570f9f40a5878687", 37967},
	10000:     {"b9f7a8e75ef22a835685a52ccba7f7d6bdc99e34b010992cbc5864cd12be6892", 399022},
	100000:    {"22776e6d4b49fa294a0d0f349268e5c28808fe7e0cb2bcbe28f63894e494d4c7", 4031728},
	1000000:   {"49415fee2c56c77864931bd3624faad425c3c577d6d74e89a83bc725506dad16", 40357417},
	10000000:  {"b9f8a44a91d46813b21b9602e72f112613c91408db0b8341fb94603d9db135e0", 403630048},
	100000000: {"0f7dda6b0837dde083c5d6b896f7d62340c8a2415b0c7121d83145e08a755272", 4036326174},
}

func checkES6(t *testing.T, n int) {
	want, ok := es6Table[n]
	if !ok {
		t.Fatalf("no known hash for the first %d lines; use one of 1000, 10000, 100000, 1000000, 10000000, 100000000", n)
	}
	sum, size := es6Hash(t, n)
	if sum != want.sum || size != want.size {
		t.Errorf("first %d ES6 lines: sha256 %s, %d bytes; want %s, %d bytes", n, sum, size, want.sum, want.size)
	}
}

// TestES6NumberPrefixes checks the short prefixes of the table, so that a
// mismatch points near the first bad line.
func TestES6NumberPrefixes(t *testing.T) {
	for _, n := range []int{1000, 10000, 100000} {
		checkES6(t, n)
	}
}

// TestES6Number1M checks the SHA-256 of the first 1,000,000 lines of the
// ES6 number stream (well under a second, also under the race detector).
func TestES6Number1M(t *testing.T) {
	checkES6(t, 1000000)
}

// TestES6ThroughCanonicalize feeds the first 1,000,000 values of the ES6
// stream with ZEO_LONG_TESTS=1 (200,000 by default or under the race
// detector) to the canonicalizer as float tokens, in exponent form and (for
// magnitudes where it is short) in fixed form, and expects the stream's
// expected text, which is also AppendFloat's (checked by the hashes above).
// This covers the token fast path on the same values.
func TestES6ThroughCanonicalize(t *testing.T) {
	n := 1000000
	if raceEnabled || !longtest.Enabled() {
		n = 200000
	}
	var seq es6Sequence
	for range n {
		f := math.Float64frombits(seq.next())
		want, err := canon.AppendFloat(nil, f)
		if err != nil {
			t.Fatal(err)
		}
		toks := []string{strconv.FormatFloat(f, 'e', -1, 64)}
		if a := math.Abs(f); a >= 1e-7 && a < 1e22 {
			toks = append(toks, strconv.FormatFloat(f, 'f', -1, 64))
		}
		for _, tok := range toks {
			if !strings.ContainsAny(tok, ".eE") {
				tok += ".0" // keep it a float token
			}
			got, err := canon.Canonicalize([]byte(tok))
			if err != nil || string(got) != string(want) {
				t.Fatalf("%s (bits %#x): got %s, %v; want %s", tok, math.Float64bits(f), got, err, want)
			}
		}
	}
}

// TestES6NumberLong checks more lines when ZEO_ES6_LINES asks for them
// (10000000 or 100000000).
func TestES6NumberLong(t *testing.T) {
	v := os.Getenv("ZEO_ES6_LINES")
	if v == "" {
		t.Skip("set ZEO_ES6_LINES=10000000 or 100000000 to check more lines of the ES6 number stream")
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("ZEO_ES6_LINES=%q: %v", v, err)
	}
	checkES6(t, n)
}
