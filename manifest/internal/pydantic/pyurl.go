package pydantic

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"

	"github.com/zeoruntime/runtimeipc/manifest/internal/jsonval"
)

// URLs as pydantic's URL types read them: pydantic-core parses with the
// Rust url crate, which implements the WHATWG URL Standard, and writes the
// URL's serialization. Only absolute URLs are taken (there is no base).
// The rules pydantic adds per type (HttpUrl's schemes, a required host,
// ...) are not in the schema and not applied (see doc/pydantic.md).

// pyURL is pydantic's URL types (AnyUrl, HttpUrl, ...) on a string.
func (w *normalizer) pyURL(v any) (result, *normError) {
	s, isStr := v.(string)
	if !isStr {
		return result{}, w.fail("url_type", "expected a string, found %s", jsonKind(v))
	}
	out, reason := parseWHATWG(s)
	if reason != "" {
		return result{}, w.fail("url_parsing", "%q is not a valid URL: %s", jsonval.Truncate(s, 80), reason)
	}
	return ok(out, lax)
}

// specialPorts are the WHATWG special schemes and their default ports
// (file has none).
var specialPorts = map[string]int{"ftp": 21, "file": -1, "http": 80, "https": 443, "ws": 80, "wss": 443}

// Percent-encode sets of the URL Standard: each is the C0 controls, every
// byte above 0x7E, and the listed ASCII bytes.
const (
	fragmentSet     = " \"<>`"
	querySet        = " \"#<>"
	specialQuerySet = querySet + "'"
	pathSet         = querySet + "?`{}"
	userinfoSet     = pathSet + "/:;=@[\\]^|"
)

func percentEncode(b *strings.Builder, s, set string) {
	const hexUpper = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || strings.IndexByte(set, c) >= 0 {
			b.WriteByte('%')
			b.WriteByte(hexUpper[c>>4])
			b.WriteByte(hexUpper[c&15])
			continue
		}
		b.WriteByte(c)
	}
}

// parseWHATWG parses an absolute URL and returns its serialization, or the
// reason it is not one.
func parseWHATWG(input string) (string, string) {
	s := strings.TrimFunc(input, func(r rune) bool { return r <= 0x20 })
	if strings.ContainsAny(s, "\t\n\r") {
		s = strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(s)
	}
	if !utf8.ValidString(s) {
		return "", "invalid UTF-8"
	}
	scheme, rest, good := splitScheme(s)
	if !good {
		return "", "relative URL without a base"
	}
	var b strings.Builder
	b.WriteString(scheme)
	b.WriteByte(':')
	defPort, special := specialPorts[scheme]
	if !special {
		defPort = -1
	}
	var host string
	hasHost := false
	switch {
	case scheme == "file":
		return parseFileURL(rest)
	case special:
		rest = strings.TrimLeft(rest, `/\`)
		hasHost = true
	case strings.HasPrefix(rest, "//"):
		rest = rest[2:]
		hasHost = true
	}
	if hasHost {
		end := len(rest)
		stops := "/?#"
		if special {
			stops = `/?#\`
		}
		if i := strings.IndexAny(rest, stops); i >= 0 {
			end = i
		}
		authority := rest[:end]
		rest = rest[end:]
		var userinfo string
		if at := strings.LastIndexByte(authority, '@'); at >= 0 {
			userinfo, authority = authority[:at], authority[at+1:]
			if authority == "" {
				return "", "empty host"
			}
		}
		hostStr, portStr, hasPort, reason := splitHostPort(authority)
		if reason != "" {
			return "", reason
		}
		if p, after, found := strings.Cut(portStr, `\`); found && hasPort {
			// A port ends at a backslash in every scheme (in a special one
			// the authority already ended there); the rest is path.
			portStr, rest = p, `\`+after+rest
		}
		if host, reason = parseURLHost(hostStr, special); reason != "" {
			return "", reason
		}
		if special && host == "" {
			return "", "empty host"
		}
		b.WriteString("//")
		if user, pass, _ := strings.Cut(userinfo, ":"); user != "" || pass != "" {
			percentEncode(&b, user, userinfoSet)
			if pass != "" {
				b.WriteByte(':')
				percentEncode(&b, pass, userinfoSet)
			}
			b.WriteByte('@')
		}
		b.WriteString(host)
		if hasPort && portStr != "" {
			port, reason := parsePort(portStr)
			if reason != "" {
				return "", reason
			}
			if port != defPort {
				b.WriteByte(':')
				b.WriteString(strconv.Itoa(port))
			}
		}
	}
	path, query, fragment, hasQuery, hasFragment := splitPathQueryFragment(rest)
	switch {
	case hasHost || strings.HasPrefix(path, "/"):
		writePath(&b, path, special, false)
	default: // an opaque path: "mailto:x", "urn:isbn:1"
		percentEncode(&b, path, "")
	}
	if hasQuery {
		b.WriteByte('?')
		set := querySet
		if special {
			set = specialQuerySet
		}
		percentEncode(&b, query, set)
	}
	if hasFragment {
		b.WriteByte('#')
		percentEncode(&b, fragment, fragmentSet)
	}
	return b.String(), ""
}

// splitScheme reads "scheme:" (an ASCII letter, then letters, digits, '+',
// '-' or '.') and lower-cases it.
func splitScheme(s string) (scheme, rest string, ok bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return strings.ToLower(s[:i]), s[i+1:], true
		default:
			return "", "", false
		}
	}
	return "", "", false
}

// splitHostPort splits "host[:port]", where an IPv6 host is in brackets.
func splitHostPort(a string) (host, port string, hasPort bool, reason string) {
	if strings.HasPrefix(a, "[") {
		end := strings.IndexByte(a, ']')
		if end < 0 {
			return "", "", false, "invalid IPv6 address"
		}
		host, a = a[:end+1], a[end+1:]
		if a == "" {
			return host, "", false, ""
		}
		if a[0] != ':' {
			return "", "", false, "invalid port number"
		}
		return host, a[1:], true, ""
	}
	host, port, hasPort = strings.Cut(a, ":")
	return host, port, hasPort, ""
}

func parsePort(s string) (int, string) {
	n := 0
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return 0, "invalid port number"
		}
		n = n*10 + int(s[i]-'0')
		if n > 65535 {
			return 0, "invalid port number"
		}
	}
	return n, ""
}

func splitPathQueryFragment(s string) (path, query, fragment string, hasQuery, hasFragment bool) {
	s, fragment, hasFragment = strings.Cut(s, "#")
	path, query, hasQuery = strings.Cut(s, "?")
	return path, query, fragment, hasQuery, hasFragment
}

// writePath writes a hierarchical path: segments split on '/' (and '\' in
// special schemes), "." and ".." (also percent-encoded) resolved, each
// segment percent-encoded. A special URL's empty path is "/". For file
// URLs a leading Windows drive letter is never removed by "..".
func writePath(b *strings.Builder, path string, special, file bool) {
	if special {
		path = strings.ReplaceAll(path, `\`, "/")
	}
	if path == "" {
		if special {
			b.WriteByte('/')
		}
		return
	}
	path = strings.TrimPrefix(path, "/")
	parts := strings.Split(path, "/")
	var segs []string
	for i, p := range parts {
		last := i == len(parts)-1
		switch {
		case isDoubleDot(p):
			if len(segs) > 0 && !(file && len(segs) == 1 && isDriveLetter(segs[0], true)) {
				segs = segs[:len(segs)-1]
			}
			if last {
				segs = append(segs, "")
			}
		case isSingleDot(p):
			if last {
				segs = append(segs, "")
			}
		default:
			var e strings.Builder
			percentEncode(&e, p, pathSet)
			segs = append(segs, e.String())
		}
	}
	for _, s := range segs {
		b.WriteByte('/')
		b.WriteString(s)
	}
}

func isSingleDot(s string) bool { return s == "." || strings.EqualFold(s, "%2e") }

func isDoubleDot(s string) bool {
	switch strings.ToLower(s) {
	case "..", ".%2e", "%2e.", "%2e%2e":
		return true
	}
	return false
}

// isDriveLetter reports a Windows drive letter ("C:", or also "C|" unless
// normalized is set).
func isDriveLetter(s string, normalized bool) bool {
	if len(s) != 2 || !('a' <= s[0]|0x20 && s[0]|0x20 <= 'z') {
		return false
	}
	return s[1] == ':' || (!normalized && s[1] == '|')
}

// parseFileURL handles "file:": an optional "//host" ("localhost" is no
// host), then a special path.
func parseFileURL(rest string) (string, string) {
	var b strings.Builder
	b.WriteString("file://")
	rest = strings.ReplaceAll(rest, `\`, "/")
	if strings.HasPrefix(rest, "//") {
		rest = rest[2:]
		end := len(rest)
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			end = i
		}
		hostStr := rest[:end]
		rest = rest[end:]
		host, reason := parseURLHost(hostStr, true)
		if reason != "" {
			return "", reason
		}
		path, _, _, _, _ := splitPathQueryFragment(rest)
		if first, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/"); isDriveLetter(first, false) {
			host = ""
		}
		if host != "localhost" {
			b.WriteString(host)
		}
	}
	path, query, fragment, hasQuery, hasFragment := splitPathQueryFragment(rest)
	writePath(&b, path, true, true)
	if hasQuery {
		b.WriteByte('?')
		percentEncode(&b, query, specialQuerySet)
	}
	if hasFragment {
		b.WriteByte('#')
		percentEncode(&b, fragment, fragmentSet)
	}
	return b.String(), ""
}

// forbiddenHost are the code points an opaque host may not hold; a domain
// may hold neither these nor C0 controls, '%' or DEL.
const forbiddenHost = "\x00\t\n\r #/:<>?@[\\]^|"

// uts46 is the URL Standard's "domain to ASCII": UTS 46 non-transitional
// processing with the Bidi and ContextJ rules, without the STD3 character
// or DNS length restrictions and hyphen checks.
var uts46 = idna.New(idna.MapForLookup(), idna.BidiRule(), idna.Transitional(false), idna.CheckHyphens(false),
	idna.CheckJoiners(true), idna.StrictDomainName(false), idna.VerifyDNSLength(false))

// parseURLHost is the URL Standard's host parser.
func parseURLHost(h string, special bool) (string, string) {
	if strings.HasPrefix(h, "[") {
		if !strings.HasSuffix(h, "]") {
			return "", "invalid IPv6 address"
		}
		a, good := parseWHATWGIPv6(h[1 : len(h)-1])
		if !good {
			return "", "invalid IPv6 address"
		}
		a.scope = ""
		return "[" + a.String() + "]", ""
	}
	if !special {
		if strings.ContainsAny(h, forbiddenHost) {
			return "", "invalid domain character"
		}
		var b strings.Builder
		percentEncode(&b, h, "")
		return b.String(), ""
	}
	if h == "" {
		return "", ""
	}
	domain := percentDecode(h)
	if !utf8.ValidString(domain) {
		return "", "invalid international domain name"
	}
	ascii, good := asciiDomain(domain)
	if !good {
		return "", "invalid international domain name"
	}
	for i := 0; i < len(ascii); i++ {
		if c := ascii[i]; c < 0x20 || c == '%' || c == 0x7f || strings.IndexByte(forbiddenHost, c) >= 0 {
			return "", "invalid international domain name"
		}
	}
	if endsInNumber(ascii) {
		v4, good := parseWHATWGIPv4(ascii)
		if !good {
			return "", "invalid IPv4 address"
		}
		return v4, ""
	}
	return ascii, ""
}

// asciiDomain is UTS 46 ToASCII. For an ASCII domain with no "xn--"
// label that is lower-casing (UTS 46 maps only A–Z among ASCII code
// points, and the Bidi and ContextJ rules need other scripts).
func asciiDomain(d string) (string, bool) {
	plain := true
	for i := 0; i < len(d) && plain; i++ {
		plain = d[i] < 0x80
	}
	if plain && !strings.Contains(strings.ToLower(d), "xn--") {
		return strings.ToLower(d), true
	}
	a, err := uts46.ToASCII(d)
	return a, err == nil
}

func percentDecode(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			hi, ok1 := hexVal(s[i+1])
			lo, ok2 := hexVal(s[i+2])
			if ok1 && ok2 {
				b.WriteByte(hi<<4 | lo)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// endsInNumber reports whether the last label (after a trailing dot is
// dropped) is decimal digits or "0x" hex: the host is then an IPv4
// address.
func endsInNumber(h string) bool {
	parts := strings.Split(h, ".")
	if parts[len(parts)-1] == "" {
		if len(parts) == 1 {
			return false
		}
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if last == "" {
		return false
	}
	if strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, good := ipv4Number(last)
	return good
}

// ipv4Number reads one part of a URL's IPv4 address: decimal, octal with
// a leading 0, or hex after "0x".
func ipv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	if s == "" {
		return 0, true
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		d, good := hexVal(s[i])
		if !good || int(d) >= base {
			return 0, false
		}
		n = n*uint64(base) + uint64(d)
		if n > 1<<40 {
			n = 1 << 40 // already too large for any part
		}
	}
	return n, true
}

func parseWHATWGIPv4(h string) (string, bool) {
	parts := strings.Split(h, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return "", false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, good := ipv4Number(p)
		if !good {
			return "", false
		}
		if i < len(parts)-1 && n > 255 {
			return "", false
		}
		nums[i] = n
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return "", false
	}
	v := last
	for i, n := range nums[:len(nums)-1] {
		v += n << (8 * (3 - i))
	}
	a := ipAddr{}
	a.b[0], a.b[1], a.b[2], a.b[3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	return a.String(), true
}

// parseWHATWGIPv6 is the URL Standard's IPv6 parser: up to eight pieces of
// one to four hex digits, one "::", and a dotted IPv4 tail (decimal, no
// leading zeros); no scope.
func parseWHATWGIPv6(s string) (ipAddr, bool) {
	a := ipAddr{v6: true}
	if strings.ContainsAny(s, "%") {
		return a, false
	}
	head, tail, compressed := strings.Cut(s, "::")
	if compressed && strings.Contains(tail, "::") {
		return a, false
	}
	pieces := func(p string, allowV4 bool) ([]uint16, bool) {
		if p == "" {
			return nil, true
		}
		var out []uint16
		fields := strings.Split(p, ":")
		for i, f := range fields {
			if allowV4 && i == len(fields)-1 && strings.Contains(f, ".") {
				v4 := strings.Split(f, ".")
				if len(v4) != 4 {
					return nil, false
				}
				var bs [4]byte
				for j, o := range v4 {
					if o == "" || len(o) > 3 || (len(o) > 1 && o[0] == '0') || strings.Trim(o, "0123456789") != "" {
						return nil, false
					}
					n, _ := strconv.Atoi(o)
					if n > 255 {
						return nil, false
					}
					bs[j] = byte(n)
				}
				out = append(out, uint16(bs[0])<<8|uint16(bs[1]), uint16(bs[2])<<8|uint16(bs[3]))
				continue
			}
			if f == "" || len(f) > 4 {
				return nil, false
			}
			var n uint16
			for j := 0; j < len(f); j++ {
				d, good := hexVal(f[j])
				if !good {
					return nil, false
				}
				n = n<<4 | uint16(d)
			}
			out = append(out, n)
		}
		return out, true
	}
	hi, good := pieces(head, !compressed)
	if !good {
		return a, false
	}
	lo, good := pieces(tail, true)
	if !good {
		return a, false
	}
	var words [8]uint16
	switch {
	case compressed && len(hi)+len(lo) <= 7:
		copy(words[:], hi)
		copy(words[8-len(lo):], lo)
	case !compressed && len(hi) == 8:
		copy(words[:], hi)
	default:
		return a, false
	}
	for i, wd := range words {
		a.b[2*i], a.b[2*i+1] = byte(wd>>8), byte(wd)
	}
	return a, true
}
