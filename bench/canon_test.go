package bench

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	jsoncanonicalizer "github.com/cyberphone/json-canonicalization/go/src/webpki.org/jsoncanonicalizer"
	"github.com/gowebpki/jcs"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/internal/testkit/testvectors"
)

// canonInputs builds the three documents of the canon benchmarks:
//
//   - envelope: the LaunchContext the real host received in transcript s02,
//     its network_hosts grown until the document is 4 KiB (a protocol
//     message as the Runtime sends and digests it);
//   - keys10k: a 1 MiB object of 10,000 members whose keys are already in
//     ascending order, each value a small object;
//   - numbers: a 1 MiB array of mixed numbers (safe integers, short
//     decimals, shortest round-trip doubles across the exponent range).
//
// Every document is compact; the peers accept all three.
func canonInputs(tb testing.TB) []struct {
	name string
	doc  []byte
} {
	tb.Helper()
	return []struct {
		name string
		doc  []byte
	}{
		{"envelope4KiB", envelopeDoc(tb)},
		{"keys10k1MiB", keysDoc()},
		{"numbers1MiB", numbersDoc()},
	}
}

func envelopeDoc(tb testing.TB) []byte {
	transcript := testvectors.RealHost[struct {
		FD3 string `json:"fd3_bytes_utf8"`
	}](tb, "s02_two_effects_success")
	var ctx map[string]any
	if err := json.Unmarshal([]byte(transcript.FD3), &ctx); err != nil {
		tb.Fatal(err)
	}
	var hosts []any
	for i := 0; ; i++ {
		ctx["network_hosts"] = hosts
		doc, err := canon.Marshal(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		if len(doc) >= 4096-24 {
			return doc
		}
		hosts = append(hosts, fmt.Sprintf("api-%02d.example.com", i))
	}
}

func keysDoc() []byte {
	const n = 10000
	buf := []byte{'{'}
	pad := bytes.Repeat([]byte("x"), 1<<20/n-64)
	for i := range n {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = fmt.Appendf(buf, `"key-%05d":{"id":%d,"name":"item %d","ok":true,"text":"%s"}`, i, i, i, pad)
	}
	return append(buf, '}')
}

func numbersDoc() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	buf := []byte{'['}
	for i := 0; len(buf) < 1<<20-32; i++ {
		if i > 0 {
			buf = append(buf, ',')
		}
		switch i % 4 {
		case 0: // safe integer
			buf = strconv.AppendInt(buf, r.Int64N(2*canon.MaxSafeInteger)-canon.MaxSafeInteger, 10)
		case 1: // short decimal, e.g. a price or a ratio
			buf = strconv.AppendFloat(buf, float64(r.IntN(10000000))/100, 'f', 2, 64)
		case 2: // any finite double, shortest form, exponent notation
			f := math.Float64frombits(r.Uint64())
			for math.IsNaN(f) || math.IsInf(f, 0) {
				f = math.Float64frombits(r.Uint64())
			}
			buf = strconv.AppendFloat(buf, f, 'g', -1, 64)
		case 3: // a double of ordinary magnitude
			buf = strconv.AppendFloat(buf, r.NormFloat64()*1000, 'g', -1, 64)
		}
	}
	return append(buf, ']')
}

// BenchmarkCanon compares canonicalize + SHA-256 digest of the same bytes
// across canon, gowebpki/jcs v1.0.2 and cyberphone's reference code, and
// SHA-256 alone as the floor.
func BenchmarkCanon(b *testing.B) {
	impls := []struct {
		name string
		run  func([]byte) ([]byte, error)
	}{
		{"canon", canon.Canonicalize},
		{"gowebpki", jcs.Transform},
		{"cyberphone", jsoncanonicalizer.Transform},
	}
	for _, in := range canonInputs(b) {
		// Check first that all agree, so the benchmark compares equal work.
		want, err := canon.Canonicalize(in.doc)
		if err != nil {
			b.Fatalf("%s: %v", in.name, err)
		}
		for _, impl := range impls[1:] {
			if got, err := impl.run(in.doc); err != nil || !bytes.Equal(got, want) {
				b.Fatalf("%s: %s disagrees with canon (err %v)", in.name, impl.name, err)
			}
		}
		for _, impl := range impls {
			b.Run(in.name+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(int64(len(in.doc)))
				b.ReportAllocs()
				cpu := processCPU()
				for b.Loop() {
					out, err := impl.run(in.doc)
					if err != nil {
						b.Fatal(err)
					}
					if impl.name == "canon" {
						_ = canon.Sum(out)
					} else {
						_ = sha256.Sum256(out)
					}
				}
				reportCPU(b, cpu)
			})
		}
		b.Run(in.name+"/sha256", func(b *testing.B) {
			b.SetBytes(int64(len(in.doc)))
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				_ = sha256.Sum256(in.doc)
			}
			reportCPU(b, cpu)
		})
	}
}

// BenchmarkCanonPaired runs canon's Canonicalize + Sum and SHA-256 alone
// of the same document in turn in every iteration and reports canon-ns/op,
// sha256-ns/op and their ratio x-sha256: the ratio of runs interleaved
// within milliseconds, immune to load that drifts between separate rows.
func BenchmarkCanonPaired(b *testing.B) {
	for _, in := range canonInputs(b) {
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.doc)))
			var ours, floor time.Duration
			for b.Loop() {
				start := time.Now()
				out, err := canon.Canonicalize(in.doc)
				if err != nil {
					b.Fatal(err)
				}
				_ = canon.Sum(out)
				mid := time.Now()
				_ = sha256.Sum256(in.doc)
				ours += mid.Sub(start)
				floor += time.Since(mid)
			}
			b.ReportMetric(float64(ours.Nanoseconds())/float64(b.N), "canon-ns/op")
			b.ReportMetric(float64(floor.Nanoseconds())/float64(b.N), "sha256-ns/op")
			b.ReportMetric(float64(ours)/float64(floor), "x-sha256")
		})
	}
}

// hostileInputs builds 1 MiB documents of the floats that are costly to
// read exactly: subnormals (whose exact conversion strconv does the slow
// way) in their shortest form and with 21 significant digits; the exact
// decimals, hundreds of digits long, of points halfway between two floats
// near 2^−1000 and 2^900, where the first 19 digits cannot decide; the
// same cut to 25 digits (just below the point, and short, so that a MiB
// holds many), also between two subnormals; the same made 900 digits long
// by zeros and a final 1 (just above the point, past the 800 digits
// strconv keeps); and a single number of a MiB of digits.
func hostileInputs() []struct {
	name string
	doc  []byte
} {
	r := rand.New(rand.NewPCG(7, 8))
	fill := func(token func() []byte) []byte {
		buf := []byte{'['}
		for len(buf) < 1<<20-3000 {
			if len(buf) > 1 {
				buf = append(buf, ',')
			}
			buf = append(buf, token()...)
		}
		return append(buf, ']')
	}
	subnormal := func(format byte, prec int) func() []byte {
		return func() []byte {
			return strconv.AppendFloat(nil, math.Float64frombits(r.Uint64()&(1<<52-1)), format, prec, 64)
		}
	}
	halfway := func(exp int) func() []byte {
		return func() []byte {
			m := int64(1<<52 | r.Int64N(1<<52))
			half := new(big.Float).SetPrec(3000).SetMantExp(new(big.Float).SetInt64(2*m+1), exp-1)
			mant, e, _ := strings.Cut(half.Text('e', 1200), "e")
			return []byte(strings.TrimRight(mant, "0") + "e" + e)
		}
	}
	halfwaySubnormal := func() []byte {
		m := r.Int64N(1 << 52)
		half := new(big.Float).SetPrec(3000).SetMantExp(new(big.Float).SetInt64(2*m+1), -1075)
		mant, e, _ := strings.Cut(half.Text('e', 1200), "e")
		return []byte(strings.TrimRight(mant, "0") + "e" + e)
	}
	// cut keeps the first n significant digits of a token of tokens, which
	// puts it just below the exact halfway point: no 19-digit prefix
	// decides it, and it is short, so that a MiB holds many.
	cut := func(n int, tokens func() []byte) func() []byte {
		return func() []byte {
			mant, e, _ := strings.Cut(string(tokens()), "e")
			exp, _ := strconv.Atoi(e)
			digits := strings.Replace(mant, ".", "", 1)
			return []byte(digits[:n] + "e" + strconv.Itoa(exp-(n-1)))
		}
	}
	// tail makes a token of tokens longer than n digits with zeros and
	// then a 1, just above the halfway point, past strconv's 800 digits.
	tail := func(n int, tokens func() []byte) func() []byte {
		return func() []byte {
			mant, e, _ := strings.Cut(string(tokens()), "e")
			exp, _ := strconv.Atoi(e)
			zeros := n - len(mant) + 1
			return []byte(mant + strings.Repeat("0", zeros) + "1e" + strconv.Itoa(exp))
		}
	}
	oneToken := func() []byte {
		digits := make([]byte, 1<<20-8)
		for i := range digits {
			digits[i] = byte('0' + r.IntN(10))
		}
		digits[0], digits[1] = '0', '.'
		return digits
	}
	return []struct {
		name string
		doc  []byte
	}{
		{"subnormalShortest", fill(subnormal('g', -1))},
		{"subnormal21Digits", fill(subnormal('e', 20))},
		{"halfwayNear2^-1000", fill(halfway(-1000))},
		{"halfwayNear2^900", fill(halfway(900))},
		{"halfwayCut25Near2^-1000", fill(cut(25, halfway(-1000)))},
		{"halfwayCut25Near2^900", fill(cut(25, halfway(900)))},
		{"halfwayCut25Subnormal", fill(cut(25, halfwaySubnormal))},
		{"halfwayTail900Near2^-1000", fill(tail(900, halfway(-1000)))},
		{"oneToken1MiB", oneToken()},
	}
}

// BenchmarkCanonHostile measures Canonicalize + Sum on hostileInputs, so
// that the cost of the slowest floats a peer can send stays in view; the
// process CPU time per operation (cpu-ns/op) is reported beside the wall
// time, which load on a shared machine inflates.
func BenchmarkCanonHostile(b *testing.B) {
	for _, in := range hostileInputs() {
		if _, err := canon.Canonicalize(in.doc); err != nil {
			b.Fatalf("%s: %v", in.name, err)
		}
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(in.doc)))
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				out, err := canon.Canonicalize(in.doc)
				if err != nil {
					b.Fatal(err)
				}
				_ = canon.Sum(out)
			}
			reportCPU(b, cpu)
		})
	}
}

// reportCPU adds the process CPU time per operation since start as the
// metric cpu-ns/op, next to the wall time of ns/op.
func reportCPU(b *testing.B, start time.Duration) {
	if start > 0 && b.N > 0 {
		b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
	}
}

func TestCanonInputs(t *testing.T) {
	for _, in := range canonInputs(t) {
		t.Logf("%s: %d bytes", in.name, len(in.doc))
	}
}
