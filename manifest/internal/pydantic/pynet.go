package pydantic

import (
	"math/big"
	"strconv"
	"strings"

	"github.com/zeoruntime/runtimeipc/manifest/internal/jsonval"
)

// UUIDs and IP addresses, networks and interfaces as pydantic reads them
// (its UUID parser; Python's ipaddress module) and writes them.

// pyUUID accepts the forms pydantic's UUID parser reads (32 hex digits;
// 8-4-4-4-12 with hyphens, optionally in braces or after "urn:uuid:") and
// writes lower-case hyphenated hex. UUIDn types also need that version
// and the RFC 4122 variant.
func (w *normalizer) pyUUID(version int, v any) (result, *normError) {
	s, isStr := v.(string)
	if !isStr {
		return result{}, w.fail("uuid_type", "expected a string, found %s", jsonKind(v))
	}
	u, good := parseUUID(s)
	if !good {
		return result{}, w.fail("uuid_parsing", "%q is not a UUID", jsonval.Truncate(s, 80))
	}
	if version != 0 {
		variantOK := u[8]&0xc0 == 0x80
		if !variantOK || int(u[6]>>4) != version {
			return result{}, w.fail("uuid_version", "%q is not a version %d UUID", jsonval.Truncate(s, 80), version)
		}
	}
	return ok(uuidString(u), lax)
}

func parseUUID(s string) ([16]byte, bool) {
	var u [16]byte
	switch len(s) {
	case 32:
		return u, hexInto(u[:], s)
	case 36:
	case 38:
		if s[0] != '{' || s[37] != '}' {
			return u, false
		}
		s = s[1:37]
	case 45:
		if !strings.HasPrefix(s, "urn:uuid:") {
			return u, false
		}
		s = s[9:]
	default:
		return u, false
	}
	if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return u, false
	}
	return u, hexInto(u[:], s[0:8]+s[9:13]+s[14:18]+s[19:23]+s[24:])
}

func hexInto(dst []byte, s string) bool {
	if len(s) != 2*len(dst) {
		return false
	}
	for i := range dst {
		hi, ok1 := hexVal(s[2*i])
		lo, ok2 := hexVal(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func hexVal(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func uuidString(u [16]byte) string {
	const hexDigits = "0123456789abcdef"
	b := make([]byte, 0, 36)
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hexDigits[c>>4], hexDigits[c&15])
	}
	return string(b)
}

// uuidInt is the UUID's 128-bit integer (Python hashes a UUID by it).
func uuidInt(s string) *big.Int {
	var u [16]byte
	if !hexInto(u[:], strings.ReplaceAll(s, "-", "")) {
		return nil
	}
	return new(big.Int).SetBytes(u[:])
}

// ipAddr is a parsed IP address: 4 or 16 bytes, and an IPv6 scope id.
type ipAddr struct {
	b     [16]byte
	v6    bool
	scope string
}

// parseIPv4 is ipaddress.IPv4Address(str): four dotted decimal octets of
// one to three ASCII digits, no leading zeros, each at most 255.
func parseIPv4(s string) (ipAddr, bool) {
	var a ipAddr
	parts := strings.Split(s, ".")
	if len(parts) != 4 {
		return a, false
	}
	for i, p := range parts {
		if p == "" || len(p) > 3 || (len(p) > 1 && p[0] == '0') {
			return a, false
		}
		n := 0
		for j := 0; j < len(p); j++ {
			if !isDigit(p[j]) {
				return a, false
			}
			n = n*10 + int(p[j]-'0')
		}
		if n > 255 {
			return a, false
		}
		a.b[i] = byte(n)
	}
	return a, true
}

// parseIPv6 is ipaddress.IPv6Address(str) on Python 3.11: an optional
// "%scope", up to eight hextets of one to four hex digits, one "::", an
// embedded IPv4 address as the last part.
func parseIPv6(s string) (ipAddr, bool) {
	a := ipAddr{v6: true}
	addr, scope, hasScope := strings.Cut(s, "%")
	if hasScope {
		if scope == "" || strings.Contains(scope, "%") {
			return a, false
		}
		a.scope = scope
	}
	parts := strings.Split(addr, ":")
	if len(parts) < 3 {
		return a, false
	}
	if last := parts[len(parts)-1]; strings.Contains(last, ".") {
		v4, ok := parseIPv4(last)
		if !ok {
			return a, false
		}
		parts = append(parts[:len(parts)-1],
			strconv.FormatUint(uint64(v4.b[0])<<8|uint64(v4.b[1]), 16),
			strconv.FormatUint(uint64(v4.b[2])<<8|uint64(v4.b[3]), 16))
	}
	if len(parts) > 9 {
		return a, false
	}
	skip := -1
	for i := 1; i < len(parts)-1; i++ {
		if parts[i] == "" {
			if skip >= 0 {
				return a, false
			}
			skip = i
		}
	}
	var hi, lo int
	if skip >= 0 {
		hi, lo = skip, len(parts)-skip-1
		if parts[0] == "" {
			hi--
			if hi != 0 {
				return a, false
			}
		}
		if parts[len(parts)-1] == "" {
			lo--
			if lo != 0 {
				return a, false
			}
		}
		if 8-(hi+lo) < 1 {
			return a, false
		}
	} else {
		if len(parts) != 8 || parts[0] == "" || parts[len(parts)-1] == "" {
			return a, false
		}
		hi, lo = len(parts), 0
	}
	var words [8]uint16
	word := func(i int) (uint16, bool) {
		p := parts[i]
		if p == "" || len(p) > 4 {
			return 0, false
		}
		var n uint16
		for j := 0; j < len(p); j++ {
			d, ok := hexVal(p[j])
			if !ok {
				return 0, false
			}
			n = n<<4 | uint16(d)
		}
		return n, true
	}
	for i := 0; i < hi; i++ {
		n, ok := word(i)
		if !ok {
			return a, false
		}
		words[i] = n
	}
	for i := 0; i < lo; i++ {
		n, ok := word(len(parts) - lo + i)
		if !ok {
			return a, false
		}
		words[8-lo+i] = n
	}
	for i, n := range words {
		a.b[2*i], a.b[2*i+1] = byte(n>>8), byte(n)
	}
	return a, true
}

// String is str() of the address: dotted decimal, or RFC 5952 hextets
// (the first longest run of two or more zero hextets compressed) and the
// scope.
func (a ipAddr) String() string {
	if !a.v6 {
		return strconv.Itoa(int(a.b[0])) + "." + strconv.Itoa(int(a.b[1])) + "." + strconv.Itoa(int(a.b[2])) + "." + strconv.Itoa(int(a.b[3]))
	}
	var words [8]uint16
	for i := range words {
		words[i] = uint16(a.b[2*i])<<8 | uint16(a.b[2*i+1])
	}
	bestStart, bestLen, curStart, curLen := -1, 0, -1, 0
	for i, wd := range words {
		if wd == 0 {
			if curStart < 0 {
				curStart = i
			}
			curLen++
			if curLen > bestLen {
				bestStart, bestLen = curStart, curLen
			}
		} else {
			curStart, curLen = -1, 0
		}
	}
	var parts []string
	for i := 0; i < 8; i++ {
		if bestLen > 1 && i == bestStart {
			parts = append(parts, "")
			if i == 0 {
				parts = append(parts, "")
			}
			i += bestLen - 1
			if i == 7 {
				parts = append(parts, "")
			}
			continue
		}
		parts = append(parts, strconv.FormatUint(uint64(words[i]), 16))
	}
	s := strings.Join(parts, ":")
	if a.scope != "" {
		s += "%" + a.scope
	}
	return s
}

func (a ipAddr) bits() int {
	if a.v6 {
		return 128
	}
	return 32
}

// prefixFromString reads a prefix length: ASCII digits, at most the
// address width (leading zeros allowed, as Python's int() reads them).
func prefixFromString(s string, width int) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, false
		}
		n = min(n*10+int(s[i]-'0'), 1<<20)
	}
	return n, n <= width
}

// prefixFromMask reads an IPv4 netmask ("255.255.255.0") or hostmask
// ("0.0.0.255") as a prefix length.
func prefixFromMask(s string) (int, bool) {
	m, ok := parseIPv4(s)
	if !ok {
		return 0, false
	}
	v := uint32(m.b[0])<<24 | uint32(m.b[1])<<16 | uint32(m.b[2])<<8 | uint32(m.b[3])
	if p, ok := prefixOfMask(v); ok {
		return p, true
	}
	return prefixOfMask(^v)
}

func prefixOfMask(v uint32) (int, bool) {
	zeros := 0
	for zeros < 32 && v&(1<<zeros) == 0 {
		zeros++
	}
	prefix := 32 - zeros
	if zeros < 32 && v>>zeros != (1<<prefix)-1 {
		return 0, false
	}
	return prefix, true
}

// ipNet is an address with a prefix length (a network or an interface).
type ipNet struct {
	addr   ipAddr
	prefix int
}

func (n ipNet) String() string { return n.addr.String() + "/" + strconv.Itoa(n.prefix) }

// parseIPNet reads "address[/prefix]" for version 4 or 6; an IPv4 prefix
// may also be a netmask or hostmask. A network (strict) refuses host bits.
func parseIPNet(s string, v6, network bool) (ipNet, bool) {
	addrStr, mask, hasMask := strings.Cut(s, "/")
	if hasMask && strings.Contains(mask, "/") {
		return ipNet{}, false
	}
	var a ipAddr
	var ok bool
	if v6 {
		a, ok = parseIPv6(addrStr)
	} else {
		a, ok = parseIPv4(addrStr)
	}
	if !ok {
		return ipNet{}, false
	}
	prefix := a.bits()
	if hasMask {
		if prefix, ok = prefixFromString(mask, a.bits()); !ok {
			if v6 {
				return ipNet{}, false
			}
			if prefix, ok = prefixFromMask(mask); !ok {
				return ipNet{}, false
			}
		}
	}
	if network {
		for i := prefix; i < a.bits(); i++ {
			if a.b[i/8]&(0x80>>(i%8)) != 0 {
				return ipNet{}, false
			}
		}
	}
	return ipNet{addr: a, prefix: prefix}, true
}

func (w *normalizer) ip(k pyKind, v any) (result, *normError) {
	s, isStr := v.(string)
	if !isStr {
		return result{}, w.fail("ip_type", "expected a string, found %s", jsonKind(v))
	}
	var out string
	good := false
	switch k {
	case kindIPv4, kindIPv6, kindIPAny:
		var a ipAddr
		if k != kindIPv6 {
			a, good = parseIPv4(s)
		}
		if !good && k != kindIPv4 {
			a, good = parseIPv6(s)
		}
		out = a.String()
	case kindIPv4Net, kindIPv6Net, kindIPAnyNet, kindIPv4If, kindIPv6If, kindIPAnyIf:
		network := k == kindIPv4Net || k == kindIPv6Net || k == kindIPAnyNet
		var n ipNet
		if k != kindIPv6Net && k != kindIPv6If {
			n, good = parseIPNet(s, false, network)
		}
		if !good && k != kindIPv4Net && k != kindIPv4If {
			n, good = parseIPNet(s, true, network)
		}
		out = n.String()
	}
	if !good {
		return result{}, w.fail(ipRule[k], "%q is not a valid %s", jsonval.Truncate(s, 80), ipNoun[k])
	}
	return ok(out, lax)
}

var (
	ipRule = map[pyKind]string{kindIPv4: "ip_v4_address", kindIPv6: "ip_v6_address", kindIPAny: "ip_any_address",
		kindIPv4Net: "ip_v4_network", kindIPv6Net: "ip_v6_network", kindIPAnyNet: "ip_any_network",
		kindIPv4If: "ip_v4_interface", kindIPv6If: "ip_v6_interface", kindIPAnyIf: "ip_any_interface"}
	ipNoun = map[pyKind]string{kindIPv4: "IPv4 address", kindIPv6: "IPv6 address", kindIPAny: "IPv4 or IPv6 address",
		kindIPv4Net: "IPv4 network", kindIPv6Net: "IPv6 network", kindIPAnyNet: "IPv4 or IPv6 network",
		kindIPv4If: "IPv4 interface", kindIPv6If: "IPv6 interface", kindIPAnyIf: "IPv4 or IPv6 interface"}
)
