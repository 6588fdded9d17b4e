package manifest_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// gen writes JSON texts for a pydantic-generated schema: valid values in
// the many spellings pydantic accepts, and near misses it refuses. It
// writes number tokens itself so that "1.0" and "1" reach both sides as
// the float and the integer they are.
type gen struct {
	r    *rand.Rand
	root map[string]any
}

func (g *gen) pick(n int) int        { return g.r.IntN(n) }
func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func oneOf[T any](g *gen, xs ...T) T { return xs[g.pick(len(xs))] }

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (g *gen) resolve(s map[string]any) map[string]any {
	for range 16 {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		cur := any(g.root)
		for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			if ref == "#" {
				break
			}
			cur = cur.(map[string]any)[tok]
		}
		s = cur.(map[string]any)
	}
	return s
}

// value writes a JSON text for schema s.
func (g *gen) value(schema any, depth int) string {
	s, _ := schema.(map[string]any)
	if s == nil {
		return g.anyJSON(depth)
	}
	s = g.resolve(s)
	if all, ok := s["allOf"].([]any); ok && len(all) == 1 {
		return g.value(all[0], depth)
	}
	if one, ok := s["oneOf"].([]any); ok {
		return g.value(one[g.pick(len(one))], depth)
	}
	if anyOf, ok := s["anyOf"].([]any); ok {
		if isDecimal(anyOf) {
			return g.decimal()
		}
		return g.value(anyOf[g.pick(len(anyOf))], depth)
	}
	if c, ok := s["const"]; ok {
		return g.enumValue([]any{c})
	}
	if e, ok := s["enum"].([]any); ok {
		return g.enumValue(e)
	}
	switch s["type"] {
	case "object":
		if _, ok := s["properties"]; ok {
			return g.object(s, depth)
		}
		return g.dict(s, depth)
	case "array":
		return g.array(s, depth)
	case "string":
		return g.str(s)
	case "integer":
		return g.integer(s)
	case "number":
		if m, ok := s["multipleOf"].(float64); ok && g.chance(0.6) {
			return strconv.FormatFloat(float64(g.pick(200)-100)*m, 'g', -1, 64)
		}
		return g.number()
	case "boolean":
		return oneOf(g, "true", "false", "true", "false", "1", "0", `"true"`)
	case "null":
		return oneOf(g, "null", "null", "null", "0", `""`)
	}
	if _, ok := s["properties"]; ok {
		return g.object(s, depth)
	}
	return g.anyJSON(depth)
}

func isDecimal(branches []any) bool {
	if len(branches) != 2 {
		return false
	}
	str, _ := branches[1].(map[string]any)
	p, _ := str["pattern"].(string)
	return strings.HasPrefix(p, `^(?!^[-+.]*$)`)
}

func (g *gen) object(s map[string]any, depth int) string {
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	if req, ok := s["required"].([]any); ok {
		for _, r := range req {
			required[r.(string)] = true
		}
	}
	var members []string
	for _, name := range sortedKeys(props) {
		ps := props[name]
		present := required[name] || g.chance(0.65)
		if required[name] && g.chance(0.02) {
			present = false
		}
		if !present || depth <= 0 && !required[name] {
			continue
		}
		members = append(members, quote(name)+":"+g.value(ps, depth-1))
	}
	if g.chance(0.15) {
		members = append(members, quote(oneOf(g, "zz_extra", "unknown", "Keep"))+":"+g.anyJSON(1))
	}
	g.r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	return "{" + strings.Join(members, ",") + "}"
}

func (g *gen) dict(s map[string]any, depth int) string {
	ap, _ := s["additionalProperties"].(map[string]any)
	n := g.pick(4)
	var members []string
	for i := range n {
		var v string
		if ap != nil {
			v = g.value(ap, depth-1)
		} else {
			v = g.anyJSON(depth - 1)
		}
		members = append(members, quote(fmt.Sprintf("k%d", i))+":"+v)
	}
	return "{" + strings.Join(members, ",") + "}"
}

func (g *gen) array(s map[string]any, depth int) string {
	if depth < 0 {
		return "[]"
	}
	var elems []string
	if prefix, ok := s["prefixItems"].([]any); ok {
		n := len(prefix)
		if g.chance(0.05) {
			n = g.pick(n + 2)
		}
		for i := range n {
			if i < len(prefix) {
				elems = append(elems, g.value(prefix[i], depth-1))
			} else {
				elems = append(elems, g.anyJSON(0))
			}
		}
		return "[" + strings.Join(elems, ",") + "]"
	}
	items, _ := s["items"].(map[string]any)
	unique, _ := s["uniqueItems"].(bool)
	n := g.pick(4)
	if unique {
		n = g.pick(9)
	}
	for range n {
		if unique && len(elems) > 0 && g.chance(0.15) {
			elems = append(elems, elems[g.pick(len(elems))]) // a raw duplicate: the schema refuses it
			continue
		}
		if items == nil {
			elems = append(elems, g.anyJSON(depth-1))
		} else {
			elems = append(elems, g.value(items, depth-1))
		}
	}
	return "[" + strings.Join(elems, ",") + "]"
}

func (g *gen) enumValue(values []any) string {
	v := values[g.pick(len(values))]
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) && g.chance(0.3) {
			return strconv.FormatInt(int64(x), 10) + ".0"
		}
	case string:
		if g.chance(0.08) {
			return quote(strings.ToUpper(x))
		}
	}
	if g.chance(0.05) {
		return oneOf(g, `"nope"`, "7", "null")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func (g *gen) integer(s map[string]any) string {
	if m, ok := s["multipleOf"].(float64); ok && g.chance(0.5) {
		return strconv.Itoa(int(m) * (g.pick(200) - 100))
	}
	if min, ok := s["exclusiveMinimum"].(float64); ok && g.chance(0.5) {
		return strconv.Itoa(int(min) + 1 + g.pick(50))
	}
	switch g.pick(12) {
	case 0:
		return strconv.Itoa(g.pick(100)) + ".0"
	case 1:
		return oneOf(g, "1e3", "2E2", "1.5e1", "-0.0", "0.0")
	case 2:
		return oneOf(g, "1e16", "9007199254740991", "-9007199254740991", "9007199254740992.0", "1e20", "1e300")
	case 3:
		return oneOf(g, "1.5", `"7"`, "true", "null")
	default:
		return strconv.Itoa(g.pick(2000) - 1000)
	}
}

func (g *gen) number() string {
	switch g.pick(8) {
	case 0:
		return strconv.Itoa(g.pick(2000) - 1000)
	case 1:
		return oneOf(g, "1e300", "-2.5e-300", "1e16", "9007199254740993.0", "0.1", "-0.0", "1E+2")
	case 2:
		return oneOf(g, `"1.5"`, "true", "null")
	default:
		return strconv.FormatFloat((g.r.Float64()-0.5)*float64(g.pick(100000)), 'g', -1, 64)
	}
}

func (g *gen) decimal() string {
	digits := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(byte('0' + g.pick(10)))
		}
		return b.String()
	}
	switch g.pick(10) {
	case 0:
		return strconv.Itoa(g.pick(20000) - 10000)
	case 1:
		return oneOf(g, "1.5", "0.1", "1e20", "1e16", "1e15", "-0.0", "1e-7", "0.0001", "123456789012345678.0", "2.5e-300", "1.0")
	case 2:
		return strconv.FormatFloat((g.r.Float64()-0.5)*1e6, 'g', -1, 64)
	case 3:
		return quote(oneOf(g, "1e3", " 1", "1_000", "", ".", "-", "abc", "1.2.3"))
	case 4:
		return quote(oneOf(g, "+", "-", "") + strings.Repeat("0", g.pick(3)) + digits(g.pick(4)) + "." + digits(g.pick(12)))
	default:
		sign := oneOf(g, "", "", "-", "+")
		whole := strings.Repeat("0", g.pick(3)) + digits(1+g.pick(5))
		if g.chance(0.5) {
			return quote(sign + whole)
		}
		return quote(sign + whole + "." + digits(g.pick(8)) + strings.Repeat("0", g.pick(3)))
	}
}

func (g *gen) str(s map[string]any) string {
	switch format, _ := s["format"].(string); format {
	case "date-time":
		return g.dateTime()
	case "date":
		return g.date()
	case "time":
		return g.time()
	case "duration":
		return g.duration()
	case "uuid", "uuid1", "uuid3", "uuid4", "uuid5":
		return g.uuid(format)
	case "ipv4":
		return quote(g.ipv4(true))
	case "ipv6":
		return quote(g.ipv6(true))
	case "ipvanyaddress":
		if g.chance(0.5) {
			return quote(g.ipv4(true))
		}
		return quote(g.ipv6(true))
	case "ipv4network", "ipv4interface":
		return quote(g.network(false, format == "ipv4network"))
	case "ipv6network", "ipv6interface":
		return quote(g.network(true, format == "ipv6network"))
	case "ipvanynetwork", "ipvanyinterface":
		return quote(g.network(g.chance(0.5), format == "ipvanynetwork"))
	case "uri":
		return quote(g.url())
	case "password":
		return quote(oneOf(g, "", "hunter2", "s3cr3t"))
	case "path":
		return quote(oneOf(g, "a//b/", "./a", "/x/../y", "", ".", "a/./b", "//a", "///a", "rel/path", "/abs/"))
	}
	if p, ok := s["pattern"].(string); ok && strings.Contains(p, "[a-z]+") {
		return quote(oneOf(g, "abc", "a1", "zz99", "A1", "abc ", "", "x123456789012"))
	}
	return quote(oneOf(g, "", "hello", "2020-01-01", "1", " spaced ", "ünïcödé", "a\"b", "line\nfeed", "x"))
}

func (g *gen) anyJSON(depth int) string {
	switch g.pick(7) {
	case 0:
		return "null"
	case 1:
		return oneOf(g, "true", "false")
	case 2:
		return strconv.Itoa(g.pick(100))
	case 3:
		return oneOf(g, "1.0", "2.5", "1e3")
	case 4:
		if depth > 0 {
			return "[" + g.anyJSON(depth-1) + "]"
		}
	case 5:
		if depth > 0 {
			return `{"k":` + g.anyJSON(depth-1) + "}"
		}
	}
	return quote(oneOf(g, "v", "2020-01-01T00:00:00+00:00", ""))
}

func pad(n, width int) string {
	s := strconv.Itoa(n)
	for len(s) < width {
		s = "0" + s
	}
	return s
}

func (g *gen) year() int {
	switch g.pick(10) {
	case 0:
		return oneOf(g, 1, 9999, 1600, 1599, 1970, 2000, 2100, 0)
	default:
		return 1900 + g.pick(250)
	}
}

func (g *gen) ymd(valid bool) string {
	y, m := g.year(), 1+g.pick(12)
	d := 1 + g.pick(28)
	if g.chance(0.2) {
		d = oneOf(g, 29, 30, 31)
	}
	if !valid {
		switch g.pick(4) {
		case 0:
			m = oneOf(g, 0, 13)
		case 1:
			d = oneOf(g, 0, 32)
		case 2:
			return pad(y, 4) + "-" + strconv.Itoa(m) + "-" + strconv.Itoa(d)
		}
	}
	return pad(y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2)
}

func (g *gen) fraction() string {
	n := 1 + g.pick(9)
	var b strings.Builder
	b.WriteString(oneOf(g, ".", ".", ","))
	for range n {
		b.WriteByte(byte('0' + g.pick(10)))
	}
	return b.String()
}

func (g *gen) clock(valid bool) string {
	h, mi, s := g.pick(24), g.pick(60), g.pick(60)
	if !valid {
		switch g.pick(4) {
		case 0:
			h = 24
		case 1:
			mi = 60
		case 2:
			s = 60
		default:
			return strconv.Itoa(h) + ":" + pad(mi, 2)
		}
	}
	out := pad(h, 2) + ":" + pad(mi, 2)
	if g.chance(0.8) {
		out += ":" + pad(s, 2)
		if g.chance(0.5) {
			out += g.fraction()
		} else if g.chance(0.05) {
			out += "."
		}
	}
	return out
}

func (g *gen) tz() string {
	switch g.pick(10) {
	case 0, 1:
		return ""
	case 2:
		return oneOf(g, "Z", "z")
	case 3:
		return oneOf(g, "+00:00", "-00:00", "+0000")
	case 4:
		return oneOf(g, "+24:00", "+01", "+01:60", " +01:00", "UTC", "+1:00")
	default:
		sign := oneOf(g, "+", "-", "\u2212")
		h, m := g.pick(24), oneOf(g, 0, 0, 30, 45, g.pick(60))
		sep := oneOf(g, ":", ":", "")
		return sign + pad(h, 2) + sep + pad(m, 2)
	}
}

func (g *gen) timestamp() string {
	switch g.pick(6) {
	case 0:
		return strconv.FormatInt(int64(g.pick(2_000_000_000)), 10)
	case 1:
		return strconv.FormatInt(-int64(g.pick(20_000_000_000)), 10)
	case 2:
		return strconv.FormatInt(20_000_000_000+int64(g.r.Int64N(253_402_300_800_000)), 10)
	case 3:
		return strconv.FormatFloat(g.r.Float64()*2e9, 'f', g.pick(9), 64)
	case 4:
		return oneOf(g, "1e10", ".5", "1.", "+1700000000", "-0.0000005", "1.5e3", "20000000000", "20000000001", "253402300800000", "-62135596800000", "nan", "1_000")
	default:
		return strconv.FormatInt(int64(g.pick(30_000))*86400, 10)
	}
}

func (g *gen) dateTime() string {
	switch g.pick(12) {
	case 0:
		return quote(g.timestamp())
	case 1:
		return quote(g.ymd(true))
	case 2:
		return quote(g.ymd(g.chance(0.5)) + "T" + g.clock(false) + g.tz())
	case 3:
		return quote(oneOf(g, "", "now", "2026-09-05T08", "2026-09-05T08:00:00Z ", "20260905T080000Z", "2026-09-05T08:00:00.Z"))
	case 4:
		return oneOf(g, "1700000000", "1.5", "null")
	default:
		return quote(g.ymd(true) + oneOf(g, "T", "T", "t", " ", "_") + g.clock(true) + g.tz())
	}
}

func (g *gen) date() string {
	switch g.pick(8) {
	case 0:
		return quote(g.timestamp())
	case 1:
		return quote(g.ymd(true) + "T00:00" + oneOf(g, "", ":00", ":00.000", ":00.000001") + g.tz())
	case 2:
		return quote(g.ymd(true) + "T" + g.clock(true))
	case 3:
		return quote(g.ymd(false))
	case 4:
		return quote(oneOf(g, "", "2026-09-05x", "2026-09-05T00", "20260905", "1699920000000", "86400.0"))
	default:
		return quote(g.ymd(true))
	}
}

func (g *gen) time() string {
	switch g.pick(8) {
	case 0:
		return quote(g.clock(false) + g.tz())
	case 1:
		return quote(oneOf(g, "", "3600", "8:00", "0800", "T08:00", "08:00:00 ", "24:00", "12:00:00.123456+05:30"))
	default:
		return quote(g.clock(true) + g.tz())
	}
}

func (g *gen) duration() string {
	num := func() string {
		n := strconv.Itoa(g.pick(400))
		if g.chance(0.1) {
			n = strconv.Itoa(g.pick(10_000_000))
		}
		return n
	}
	switch g.pick(10) {
	case 0, 1, 2, 3:
		var b strings.Builder
		b.WriteString(oneOf(g, "", "", "", "-", "+"))
		b.WriteString("P")
		units := []string{"Y", "M", "W", "D"}
		parts := 0
		frac := false
		for _, u := range units {
			if g.chance(0.35) && !frac {
				b.WriteString(num())
				if g.chance(0.15) {
					b.WriteString(g.fraction()[:2])
					frac = true
				}
				b.WriteString(u)
				parts++
			}
		}
		if g.chance(0.7) || parts == 0 {
			b.WriteString("T")
			for _, u := range []string{"H", "M", "S"} {
				if g.chance(0.5) && (!frac || g.chance(0.1)) {
					b.WriteString(num())
					if g.chance(0.25) {
						b.WriteString(g.fraction())
						frac = true
					}
					b.WriteString(u)
				}
			}
		}
		return quote(b.String())
	case 4, 5:
		h := g.pick(30)
		if g.chance(0.2) {
			h = g.pick(100000)
		}
		clock := strconv.Itoa(h)
		if g.chance(0.5) {
			clock = pad(h, 2)
		}
		clock += ":" + pad(g.pick(60), 2)
		if g.chance(0.7) {
			clock += ":" + pad(g.pick(60), 2)
			if g.chance(0.4) {
				clock += g.fraction()
			}
		}
		return quote(oneOf(g, "", "", "-", "+") + clock)
	case 6, 7:
		d := strconv.Itoa(g.pick(1000))
		word := oneOf(g, " day", " days", "d", " d", "D", " DAYS", " Days")
		tail := oneOf(g, "", ", ", ",", " ") + oneOf(g, "", pad(g.pick(24), 2)+":"+pad(g.pick(60), 2)+":"+pad(g.pick(60), 2), pad(g.pick(24), 2)+":"+pad(g.pick(60), 2))
		return quote(oneOf(g, "", "-", "+") + d + word + tail)
	case 8:
		return oneOf(g, "3600", "1.5", "-2", "true", "null")
	default:
		return quote(oneOf(g, "P", "PT", "P1DT", "PT-1S", "p1d", "P1dT1h", "1:2:3", "P1.5DT1H", "PT1.5S1M", "3600", "1 dayss", "P1000000000D",
			"P999999999D", "-P999999999DT86399.999999S", "PT4294967296S", "9999999999:00:00", "2400000000:00:00", "1 day, 25:00:00", "+PT", "-PT0S"))
	}
}

func (g *gen) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.pick(16)]
	}
	return string(b)
}

func (g *gen) uuid(format string) string {
	h := g.hex(32)
	if strings.HasPrefix(format, "uuid") && len(format) == 5 && g.chance(0.8) {
		b := []byte(h)
		b[12] = format[4]
		b[16] = "89ab"[g.pick(4)]
		h = string(b)
	}
	hyph := h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
	switch g.pick(9) {
	case 0:
		return quote(h)
	case 1:
		return quote(strings.ToUpper(hyph))
	case 2:
		return quote("{" + hyph + "}")
	case 3:
		return quote("urn:uuid:" + hyph)
	case 4:
		return quote(oneOf(g, "URN:UUID:"+hyph, " "+hyph, hyph+" ", hyph[:35], "{"+h+"}", strings.ReplaceAll(hyph, "-", "_"), "0x"+h, ""))
	default:
		return quote(hyph)
	}
}

func (g *gen) ipv4(valid bool) string {
	oct := func() string {
		n := g.pick(256)
		if g.chance(0.3) {
			n = oneOf(g, 0, 1, 10, 127, 192, 255)
		}
		return strconv.Itoa(n)
	}
	parts := []string{oct(), oct(), oct(), oct()}
	if valid && g.chance(0.9) {
		return strings.Join(parts, ".")
	}
	switch g.pick(5) {
	case 0:
		parts[g.pick(4)] = "0" + parts[0]
	case 1:
		parts[g.pick(4)] = "256"
	case 2:
		parts = parts[:3]
	case 3:
		return " " + strings.Join(parts, ".")
	default:
		return strings.Join(parts, ".") + "/32"
	}
	return strings.Join(parts, ".")
}

func (g *gen) ipv6(valid bool) string {
	var words [8]uint16
	for i := range words {
		switch g.pick(3) {
		case 0:
			words[i] = 0
		case 1:
			words[i] = uint16(g.pick(16))
		default:
			words[i] = uint16(g.pick(65536))
		}
	}
	if g.chance(0.2) {
		words = [8]uint16{0, 0, 0, 0, 0, 0xffff, uint16(g.pick(65536)), uint16(g.pick(65536))}
	}
	hexWord := func(w uint16) string {
		s := strconv.FormatUint(uint64(w), 16)
		if g.chance(0.2) {
			s = strings.Repeat("0", 4-len(s)) + s
		}
		if g.chance(0.2) {
			s = strings.ToUpper(s)
		}
		return s
	}
	parts := make([]string, 8)
	for i, w := range words {
		parts[i] = hexWord(w)
	}
	v4tail := g.chance(0.15)
	if v4tail {
		parts = append(parts[:6], fmt.Sprintf("%d.%d.%d.%d", words[6]>>8, words[6]&255, words[7]>>8, words[7]&255))
	}
	// Compress one run of zero words, chosen at random among the runs.
	var runs [][2]int
	for i := 0; i < len(parts); i++ {
		if parts[i] == "0" || parts[i] == "0000" {
			j := i
			for j < len(parts) && (parts[j] == "0" || parts[j] == "0000") {
				j++
			}
			runs = append(runs, [2]int{i, j})
			i = j
		}
	}
	s := strings.Join(parts, ":")
	if len(runs) > 0 && g.chance(0.7) {
		r := runs[g.pick(len(runs))]
		s = strings.Join(parts[:r[0]], ":") + "::" + strings.Join(parts[r[1]:], ":")
	}
	if g.chance(0.08) {
		s += "%" + oneOf(g, "eth0", "1", "25x")
	}
	if valid && g.chance(0.9) {
		return s
	}
	return oneOf(g, s+"::", ":::", "1:2:3:4:5:6:7:8:9", "00001::", "["+s+"]", s+"%", "1::2::3")
}

func (g *gen) network(v6, strict bool) string {
	if v6 {
		a := g.ipv6(true)
		if strings.Contains(a, "%") && g.chance(0.7) {
			a = a[:strings.Index(a, "%")]
		}
		prefix := g.pick(129)
		if strict && g.chance(0.6) {
			prefix = oneOf(g, 128, 0)
			if prefix == 0 {
				a = "::"
			}
		}
		if g.chance(0.1) {
			return a
		}
		return a + "/" + oneOf(g, "", "0") + strconv.Itoa(prefix)
	}
	a := g.ipv4(g.chance(0.95))
	prefix := g.pick(33)
	if strict && g.chance(0.6) {
		prefix = oneOf(g, 0, 8, 16, 24, 32)
		parts := strings.Split(a, ".")
		if len(parts) == 4 {
			for i := prefix / 8; i < 4; i++ {
				parts[i] = "0"
			}
			a = strings.Join(parts, ".")
		}
	}
	switch g.pick(6) {
	case 0:
		return a
	case 1:
		mask := uint32(0xffffffff) << (32 - prefix)
		if prefix == 0 {
			mask = 0
		}
		if g.chance(0.5) {
			mask = ^mask
		}
		return fmt.Sprintf("%s/%d.%d.%d.%d", a, mask>>24, mask>>16&255, mask>>8&255, mask&255)
	case 2:
		return a + "/" + oneOf(g, "33", " 24", "024", "255.0.255.0", "")
	default:
		return a + "/" + strconv.Itoa(prefix)
	}
}

func (g *gen) url() string {
	if g.chance(0.12) {
		return oneOf(g, "mailto:foo@bar.com", "mailto:a b@c", "urn:isbn:123", "foo:bar", "foo:a b ", "data:text/plain,hi",
			"javascript:alert(1)", "foo:/bar", "foo://", "foo:", "a:", "sc:\\\\../", "x://a%zz", "", "example.com", "//h/p", "1http://a",
			"http://", "http://@", "http:// /", "file:", "file://", "file:///etc/passwd", "file://localhost/etc", "file://host/p",
			"file://HOST/C:/x/../..", "file:///C|/x", "foo:a\tb", " http://h/ ")
	}
	scheme := oneOf(g, "http", "https", "HTTP", "Https", "ftp", "ws", "wss", "foo", "sc", "git+ssh")
	sep := oneOf(g, "://", "://", "://", ":/", ":", ":\\\\", ":///")
	host := oneOf(g, "example.com", "EXAMPLE.com", "a.b.c", "xn--4ca0bs.com", "ÄÖ.com", "ÉCOLE.fr", "faß.de", "ex%41mple.com",
		"%C3%A4.com", "a_b.com", "-.com", "a..", ".", "a.com.", "h", "a b.com", "a<b.com", "xn--a.com", "a\u200db.com",
		"127.0.0.1", "0x7f.1", "0x7F000001", "0177.0.0.1", "4294967295", "4294967296", "1.2.3.4.", "1.2.3.4..", "09.1.1.1",
		"1.2.3.0x10", "1.2.3.256", "999999999999", "127.1",
		"[::1]", "[0:0::1]", "[::1.2.3.4]", "[::ffff:1.2.3.4]", "[1:0:0:0:0:0:0:0]", "[2001:DB8::1]", "[:::1]", "[1::2::3]", "[fe80::1%25eth0]")
	port := oneOf(g, "", "", "", ":80", ":443", ":21", ":8080", ":0", ":00080", ":65535", ":65536", ":", ":+80", ":8080abc")
	user := oneOf(g, "", "", "", "", "user:pass@", "user@", ":@", "@", "a:b@c:d@", "u r:p w@", "ä@", "user:p%40ss@")
	path := oneOf(g, "", "", "/", "/a/b/../c/./d", "/~ b", "/ä", "/%7e", "/%7E", "/b/%2e/c", "/b/%2E%2E/c", "//a", "/a//b",
		"/..", "/a/..", "/a/.", "\\a\\b", "/^{}|`'\"<>", "/a%2fb", "/C:/x/..")
	query := oneOf(g, "", "", "", "?q=a b&c=ä", "?", "?x=1", "?'^{}|`\"<> ", "?a?b", "?%", "?%zz")
	frag := oneOf(g, "", "", "", "#frag ment", "#", "#a#b", "#^{}|`'\"<> ", "#ä")
	u := scheme + sep + user + host + port + path + query + frag
	if g.chance(0.05) {
		i := g.pick(len(u) + 1)
		u = u[:i] + oneOf(g, "\t", "\n", " ") + u[i:]
	}
	return u
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
