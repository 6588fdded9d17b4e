package canon_test

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/zeoruntime/runtimeipc/canon"
)

// longFloat is one case of testdata/longfloats.json: the token
// prefix + zeros × "0" + suffix, and what Python's float() reads from it
// (float.hex(), or "inf" when it overflows).
type longFloat struct {
	Name   string `json:"name"`
	Prefix string `json:"prefix"`
	Zeros  int    `json:"zeros"`
	Suffix string `json:"suffix"`
	Python string `json:"python"`
}

func (c longFloat) token() string { return c.Prefix + strings.Repeat("0", c.Zeros) + c.Suffix }

// TestLongFloatsMatchPython checks float tokens past strconv's exact range
// (more than 800 digits, exponents past 10,000, ties decided by a digit
// far down the token) against the float64 Python's float() reads from
// each, recorded by testdata/longfloats.py: Canonicalize writes its
// canonical form, alone and inside an array, Parse returns it, and an
// overflow is refused as ErrNonFinite everywhere.
func TestLongFloatsMatchPython(t *testing.T) {
	b, err := os.ReadFile("testdata/longfloats.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []longFloat
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 30 {
		t.Fatalf("testdata/longfloats.json has %d cases, want the full table", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			tok := c.token()
			got, err := canon.Canonicalize([]byte(tok))
			inArray, aerr := canon.Canonicalize([]byte("[" + tok + "," + tok + "]"))
			v, perr := canon.Parse([]byte(tok))
			checkErr := canon.CheckCanonical([]byte(tok))
			if c.Python == "inf" {
				for _, err := range []error{err, aerr, perr, checkErr} {
					if !errors.Is(err, canon.ErrNonFinite) {
						t.Errorf("Python overflows; got %v, want ErrNonFinite", err)
					}
				}
				return
			}
			want, err2 := strconv.ParseFloat(c.Python, 64)
			if err2 != nil {
				t.Fatalf("bad expectation %q: %v", c.Python, err2)
			}
			wantText, _ := canon.AppendFloat(nil, want)
			if err != nil || string(got) != string(wantText) {
				t.Errorf("Canonicalize = %.40s (%v), want %s (Python %s)", got, err, wantText, c.Python)
			}
			if wantArr := "[" + string(wantText) + "," + string(wantText) + "]"; aerr != nil || string(inArray) != wantArr {
				t.Errorf("in an array: %.80s (%v), want %s", inArray, aerr, wantArr)
			}
			if perr != nil || v.Kind != canon.Float || math.Float64bits(v.Float) != math.Float64bits(want) {
				t.Errorf("Parse = %v %x (%v), want %x", v.Kind, math.Float64bits(v.Float), perr, math.Float64bits(want))
			}
			if !errors.Is(checkErr, canon.ErrNotCanonical) && tok != string(wantText) {
				t.Errorf("CheckCanonical = %v, want ErrNotCanonical", checkErr)
			}
		})
	}
}

// halfwayDecimal returns the exact decimal of the point halfway between
// the float64 x > 0 and its upper neighbour: digits and exponent.
func halfwayDecimal(x float64) (string, int) {
	mant, exp := math.Frexp(x) // x = mant·2^exp, mant in [0.5, 1)
	m := new(big.Int).SetUint64(uint64(math.Ldexp(mant, 53)))
	e := exp - 53
	if x < 0x1p-1022 { // subnormal: the spacing is 2^−1074
		m.SetUint64(math.Float64bits(x))
		e = -1074
	}
	// (2m+1)·2^(e−1) = (2m+1)·5^(1−e)·10^(e−1) when e−1 < 0.
	h := new(big.Int).Lsh(m, 1)
	h.Add(h, big.NewInt(1))
	if e-1 >= 0 {
		h.Lsh(h, uint(e-1))
		return h.String(), 0
	}
	h.Mul(h, new(big.Int).Exp(big.NewInt(5), big.NewInt(int64(1-e)), nil))
	return h.String(), e - 1
}

// TestLongFloatProperty checks the exact reading of float tokens against
// math/big.Rat on tokens drawn around the points halfway between two
// float64s (normal, subnormal, and next to the largest), where no prefix
// of the digits decides the rounding: the point itself, cut short, or
// followed by zeros and then a nonzero digit, with the decimal point moved
// into the digits or in front of them, and leading zeros added.
func TestLongFloatProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var x float64
		switch rapid.IntRange(0, 3).Draw(t, "range") {
		case 0:
			x = math.Float64frombits(rapid.Uint64Range(1, 1<<52-1).Draw(t, "subnormal"))
		case 1:
			x = math.Nextafter(math.MaxFloat64, 0)
			if rapid.Bool().Draw(t, "max") {
				x = math.MaxFloat64
			}
		default:
			x = math.Float64frombits(rapid.Uint64Range(1<<52, 0x7FEF_FFFF_FFFF_FFFF).Draw(t, "normal"))
		}
		digits, exp := halfwayDecimal(x)
		switch rapid.IntRange(0, 3).Draw(t, "tail") {
		case 0: // the tie itself
		case 1: // cut short: just below the tie
			n := rapid.IntRange(1, len(digits)).Draw(t, "cut")
			exp += len(digits) - n
			digits = digits[:n]
		case 2: // just above the tie
			z := rapid.IntRange(0, 1200).Draw(t, "zeros")
			digits += strings.Repeat("0", z) + "1"
			exp -= z + 1
		case 3: // just below the tie
			z := rapid.IntRange(0, 1200).Draw(t, "nines")
			n, _ := new(big.Int).SetString(digits, 10)
			n.Mul(n, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(z+1)), nil))
			digits = n.Sub(n, big.NewInt(1)).String()
			exp -= z + 1
		}
		// Move the point: p digits before it, then leading zeros.
		p := rapid.IntRange(0, len(digits)).Draw(t, "point")
		var b strings.Builder
		if rapid.Bool().Draw(t, "neg") {
			b.WriteByte('-')
		}
		if p == 0 {
			lead := rapid.IntRange(0, 30).Draw(t, "leading")
			b.WriteString("0." + strings.Repeat("0", lead) + digits)
			exp += lead + len(digits)
		} else {
			b.WriteString(digits[:p])
			if p < len(digits) {
				b.WriteString("." + digits[p:])
			}
			exp += len(digits) - p
		}
		b.WriteString("e" + strconv.Itoa(exp))
		tok := b.String()
		got, err := canon.Canonicalize([]byte(tok))
		want, werr := canon.ReferenceFloat([]byte(tok))
		if errors.Is(werr, canon.ErrNonFinite) != errors.Is(err, canon.ErrNonFinite) || werr == nil && string(got) != string(want) {
			t.Fatalf("%.60s… (%d bytes): Canonicalize %s (%v), exact %s (%v)", tok, len(tok), got, err, want, werr)
		}
	})
}
