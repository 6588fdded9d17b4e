package pydantic

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/zeoruntime/runtimeipc/manifest/internal/jsonval"
)

// Sets and frozensets: pydantic builds a Python set by adding the
// validated elements in input order (an element equal to one already
// there is dropped) and model_dump(mode="json") writes the set in its
// iteration order, which is CPython's hash-table slot order. That order
// is reproduced here for elements whose hash CPython computes without
// the per-process string hash seed: numbers (int, float, bool, Decimal),
// UUIDs, timedeltas, IP networks, and tuples of those. Strings, dates,
// enums and the rest hash through the seeded string hash, so their order
// changes from one host process to the next; for those the first
// occurrences are kept in input order, and a digest over two or more of
// them can only match a host started with a fixed PYTHONHASHSEED that
// happens to agree (see doc/pydantic.md).

// pyHashModulus is CPython's numeric hash modulus, 2^61 − 1.
const pyHashModulus = 1<<61 - 1

var bigModulus = big.NewInt(pyHashModulus)

// pySet deduplicates normalized elements by Python equality and orders
// them as CPython iterates the set.
func (w *normalizer) pySet(elem *pyNode, elems []any) ([]any, *normError) {
	keys := make(map[string]bool, len(elems))
	unique := elems[:0:0]
	hashes := make([]uint64, 0, len(elems))
	hashable := true
	for _, e := range elems {
		k := pyEqKey(elem, e)
		if keys[k] {
			continue
		}
		keys[k] = true
		unique = append(unique, e)
		if hashable {
			h, good := pyHash(elem, e)
			hashable = good
			hashes = append(hashes, h)
		}
	}
	if !hashable || len(unique) < 2 {
		return unique, nil
	}
	return cpythonSetOrder(unique, hashes), nil
}

// cpythonSetOrder inserts values with the given hashes into a CPython
// 3.11 set (setobject.c: 8 slots, linear probing of 9 more slots, then
// perturbed probing; resize at 3/5 full to the next power of two above 4×
// the used count, re-inserting in slot order) and returns them in slot
// order. The values are distinct.
func cpythonSetOrder(values []any, hashes []uint64) []any {
	const linearProbes = 9
	const perturbShift = 5
	type slot struct {
		used bool
		hash uint64
		idx  int
	}
	table := make([]slot, 8)
	insertClean := func(t []slot, h uint64, idx int) {
		mask := uint64(len(t) - 1)
		perturb := h
		i := h & mask
		for {
			if !t[i].used {
				t[i] = slot{true, h, idx}
				return
			}
			if i+linearProbes <= mask {
				for j := uint64(1); j <= linearProbes; j++ {
					if !t[i+j].used {
						t[i+j] = slot{true, h, idx}
						return
					}
				}
			}
			perturb >>= perturbShift
			i = (i*5 + 1 + perturb) & mask
		}
	}
	fill := 0
	for idx, h := range hashes {
		mask := uint64(len(table) - 1)
		insertClean(table, h, idx)
		fill++
		if uint64(fill)*5 >= mask*3 {
			minused := fill * 4
			if fill > 50000 {
				minused = fill * 2
			}
			size := 8
			for size <= minused {
				size <<= 1
			}
			next := make([]slot, size)
			for _, s := range table {
				if s.used {
					insertClean(next, s.hash, s.idx)
				}
			}
			table = next
		}
	}
	out := make([]any, 0, len(values))
	for _, s := range table {
		if s.used {
			out = append(out, values[s.idx])
		}
	}
	return out
}

// pyEqKey is a string that two normalized values share exactly when
// Python finds the values they stand for equal.
func pyEqKey(n *pyNode, v any) string {
	switch n.kind {
	case kindTuple:
		arr, _ := v.([]any)
		var b strings.Builder
		b.WriteString("t(")
		for i, e := range arr {
			sub := n.elem
			if i < len(n.prefix) {
				sub = n.prefix[i]
			}
			if sub == nil {
				sub = anyNode
			}
			b.WriteString(strconv.Quote(pyEqKey(sub, e)))
			b.WriteByte(',')
		}
		b.WriteByte(')')
		return b.String()
	case kindDecimal:
		if r := decimalRat(v); r != nil {
			return "n:" + r.RatString()
		}
	case kindDateTime, kindTime:
		// Aware values compare by instant, naive ones by clock; the two
		// are never equal.
		if s, isStr := v.(string); isStr {
			parse, tag := parsePyDateTime, "dt"
			if n.kind == kindTime {
				parse, tag = parsePyTime, "tm"
			}
			if t, reason := parse(s); reason == "" {
				if !t.hasTZ {
					tag += "n"
				}
				return tag + ":" + strconv.FormatInt(t.instant(), 10)
			}
		}
	case kindDuration:
		if s, isStr := v.(string); isStr {
			if d, reason := parsePyDuration(s); reason == "" {
				days, secs, micros := d.pyState()
				return fmt.Sprintf("td:%d:%d:%d", days, secs, micros)
			}
		}
	case kindUnion, kindAllOf:
		// The member that produced v is not recorded; plain JSON equality
		// with Python's number rule is the closest key.
	}
	return jsonEqKey(v)
}

// jsonEqKey keys a plain JSON value with Python's equality: numbers (and
// booleans, which Python treats as 0 and 1) by exact value.
func jsonEqKey(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		if x {
			return "n:1"
		}
		return "n:0"
	case int64:
		return "n:" + strconv.FormatInt(x, 10)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return "f:" + strconv.FormatFloat(x, 'g', -1, 64)
		}
		if x == math.Trunc(x) && math.Abs(x) < 1<<63 {
			return "n:" + strconv.FormatInt(int64(x), 10)
		}
		r := new(big.Rat).SetFloat64(x)
		if r.IsInt() {
			return "n:" + r.Num().String()
		}
		return "n:" + r.RatString()
	case string:
		return "s:" + x
	case []any:
		var b strings.Builder
		b.WriteString("a[")
		for _, e := range x {
			b.WriteString(strconv.Quote(jsonEqKey(e)))
			b.WriteByte(',')
		}
		b.WriteByte(']')
		return b.String()
	case map[string]any:
		// Models and dicts are unhashable: pydantic refuses them in sets.
		return "o:" + strconv.Quote(jsonval.Describe(x))
	}
	return "?"
}

// pyHash is CPython's hash of the value v stands for, when it does not
// depend on the process's string hash seed.
func pyHash(n *pyNode, v any) (uint64, bool) {
	switch n.kind {
	case kindInt, kindFloat, kindBool, kindUnion, kindAny:
		// A union member's or Any's number stays the int, float or bool it
		// was read as; any other value may be a string-hashed type.
		switch x := v.(type) {
		case int64:
			return hashInt(x), true
		case float64:
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return 0, false
			}
			return hashFloat(x), true
		case bool:
			if x {
				return 1, true
			}
			return 0, true
		}
	case kindDecimal:
		if r := decimalRat(v); r != nil {
			return hashRat(r), true
		}
	case kindUUID:
		if s, isStr := v.(string); isStr {
			if i := uuidInt(s); i != nil {
				return hashBig(i), true
			}
		}
	case kindDuration:
		if s, isStr := v.(string); isStr {
			if d, reason := parsePyDuration(s); reason == "" {
				days, secs, micros := d.pyState()
				return hashTuple([]uint64{hashInt(days), hashInt(secs), hashInt(micros)}), true
			}
		}
	case kindIPv4Net, kindIPv6Net:
		if s, isStr := v.(string); isStr {
			if net, good := parseIPNet(s, n.kind == kindIPv6Net, true); good {
				width := net.addr.bits()
				addr := new(big.Int).SetBytes(net.addr.b[:width/8])
				mask := new(big.Int).Lsh(big.NewInt(1), uint(width))
				mask.Sub(mask, new(big.Int).Lsh(big.NewInt(1), uint(width-net.prefix)))
				return hashBig(addr.Xor(addr, mask)), true
			}
		}
	case kindTuple:
		arr, _ := v.([]any)
		lanes := make([]uint64, len(arr))
		for i, e := range arr {
			sub := n.elem
			if i < len(n.prefix) {
				sub = n.prefix[i]
			}
			if sub == nil {
				return 0, false
			}
			h, good := pyHash(sub, e)
			if !good {
				return 0, false
			}
			lanes[i] = h
		}
		return hashTuple(lanes), true
	}
	return 0, false
}

// hashInt is CPython's hash of an int that fits in int64: the value
// modulo 2^61 − 1 with its sign, −1 replaced by −2.
func hashInt(n int64) uint64 {
	neg := n < 0
	u := uint64(n)
	if neg {
		u = -u
	}
	u %= pyHashModulus
	h := int64(u)
	if neg {
		h = -h
	}
	if h == -1 {
		h = -2
	}
	return uint64(h)
}

// hashFloat is CPython's _Py_HashDouble for a finite float: its exact
// value modulo 2^61 − 1, computed 28 bits of mantissa at a time.
func hashFloat(v float64) uint64 {
	const bits = 61
	m, e := math.Frexp(v)
	sign := uint64(1)
	if m < 0 {
		sign = math.MaxUint64 // −1 as an unsigned word
		m = -m
	}
	var x uint64
	for m != 0 {
		x = ((x << 28) & pyHashModulus) | x>>(bits-28)
		m *= 268435456.0
		e -= 28
		y := uint64(m)
		m -= float64(y)
		x += y
		if x >= pyHashModulus {
			x -= pyHashModulus
		}
	}
	if e >= 0 {
		e %= bits
	} else {
		e = bits - 1 - ((-1 - e) % bits)
	}
	x = ((x << uint(e)) & pyHashModulus) | x>>(bits-uint(e))
	x *= sign
	if x == math.MaxUint64 {
		x = math.MaxUint64 - 1
	}
	return x
}

// hashBig is CPython's hash of a non-negative big integer.
func hashBig(i *big.Int) uint64 {
	return uint64(new(big.Int).Mod(i, bigModulus).Int64())
}

// hashRat is CPython's hash of a rational number: |p| × q⁻¹ modulo
// 2^61 − 1 with the sign of the value, and −1 replaced by −2 (as an
// unsigned 64-bit word).
func hashRat(r *big.Rat) uint64 {
	p := new(big.Int).Abs(r.Num())
	q := r.Denom()
	p.Mod(p, bigModulus)
	inv := new(big.Int).ModInverse(new(big.Int).Mod(q, bigModulus), bigModulus)
	if inv == nil {
		return 0 // q a multiple of the modulus: never for the values here
	}
	h := p.Mul(p, inv).Mod(p, bigModulus).Int64()
	if r.Sign() < 0 {
		h = -h
	}
	if h == -1 {
		h = -2
	}
	return uint64(h)
}

// hashTuple is CPython 3.11's tuple hash (xxHash-based lanes).
func hashTuple(lanes []uint64) uint64 {
	const (
		prime1 uint64 = 11400714785074694791
		prime2 uint64 = 14029467366897019727
		prime5 uint64 = 2870177450012600261
	)
	acc := prime5
	for _, lane := range lanes {
		acc += lane * prime2
		acc = acc<<31 | acc>>33
		acc *= prime1
	}
	acc += uint64(len(lanes)) ^ (prime5 ^ 3527539)
	if acc == math.MaxUint64 {
		return 1546275796
	}
	return acc
}

// decimalRat is the exact value of a normalized Decimal string.
func decimalRat(v any) *big.Rat {
	s, isStr := v.(string)
	if !isStr {
		return nil
	}
	d, good := parseDecimalString(s)
	if !good {
		return nil
	}
	coef, _ := new(big.Int).SetString(d.coef, 10)
	if coef == nil {
		return nil
	}
	r := new(big.Rat).SetInt(coef)
	if d.neg {
		r.Neg(r)
	}
	if d.exp != 0 {
		e := d.exp
		if e < -400 || e > 400 {
			return nil // no set of such decimals is worth a big power here
		}
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(absInt(e))), nil)
		pr := new(big.Rat).SetInt(p)
		if e > 0 {
			r.Mul(r, pr)
		} else {
			r.Quo(r, pr)
		}
	}
	return r
}

func absInt(i int) int {
	if i < 0 {
		return -i
	}
	return i
}
