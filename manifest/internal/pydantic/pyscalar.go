package pydantic

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zeoruntime/runtimeipc/manifest/internal/jsonval"
)

// Scalars as pydantic's lax validators take JSON values (after Python's
// json module read them: integer literals are int, others float) and as
// model_dump(mode="json") writes them back.

// maxSafe is the largest integer the host's canonical JSON accepts.
const maxSafe = 1<<53 - 1

func (w *normalizer) scalar(n *pyNode, v any) (result, *normError) {
	switch n.kind {
	case kindInt:
		return w.pyInt(v)
	case kindFloat:
		return w.pyFloat(v)
	case kindBool:
		return w.pyBool(v)
	case kindStr:
		if _, isStr := v.(string); isStr {
			return ok(v, exact)
		}
		return result{}, w.fail("string_type", "expected a string, found %s", jsonKind(v))
	case kindNull:
		if v == nil {
			return ok(nil, exact)
		}
		return result{}, w.fail("none_required", "expected null, found %s", jsonKind(v))
	case kindSecret:
		s, isStr := v.(string)
		if !isStr {
			return result{}, w.fail("string_type", "expected a string, found %s", jsonKind(v))
		}
		if s == "" {
			return ok("", lax)
		}
		// SecretStr serializes masked: the digest covers the mask.
		return ok("**********", lax)
	case kindPath:
		s, isStr := v.(string)
		if !isStr {
			return result{}, w.fail("path_type", "expected a string, found %s", jsonKind(v))
		}
		return ok(purePosixPath(s), lax)
	case kindDecimal:
		return w.pyDecimal(v)
	case kindDateTime, kindDate, kindTime, kindDuration:
		return w.temporal(n.kind, v)
	case kindUUID:
		return w.pyUUID(n.version, v)
	case kindURL:
		return w.pyURL(v)
	}
	return w.ip(n.kind, v)
}

// pyInt: an integer is itself; an integral float, a boolean, or a string
// holding an integer ("1_000", " 7 ", "3.00") becomes the integer.
func (w *normalizer) pyInt(v any) (result, *normError) {
	switch x := v.(type) {
	case int64:
		return ok(x, exact)
	case bool:
		if x {
			return ok(int64(1), lax)
		}
		return ok(int64(0), lax)
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) || math.IsNaN(x) {
			return result{}, w.fail("int_from_float", "%v is not an integer", x)
		}
		return w.safeInt(x)
	case string:
		n, big, isInt := parsePyIntString(x)
		if !isInt {
			return result{}, w.fail("int_parsing", "%q is not an integer", jsonval.Truncate(x, 80))
		}
		if big || n > maxSafe || n < -maxSafe {
			return result{}, w.fatal("int.unsafe", "%q becomes an integer beyond ±(2^53−1), which the host cannot hash", jsonval.Truncate(x, 80))
		}
		return ok(n, lax)
	}
	return result{}, w.fail("int_type", "expected an integer, found %s", jsonKind(v))
}

// safeInt returns an integral value as an integer the host can hash.
// pydantic takes integers of any size, but the host's canonical JSON
// refuses one beyond ±(2^53−1), so the call could never bind.
func (w *normalizer) safeInt(f float64) (result, *normError) {
	if math.Abs(f) >= 1<<63 {
		return result{}, w.fail("int_parsing_size", "%v exceeds the integer size pydantic accepts", f)
	}
	if math.Abs(f) > maxSafe {
		return result{}, w.fatal("int.unsafe", "%v becomes an integer beyond ±(2^53−1), which the host cannot hash", f)
	}
	return ok(int64(f), lax)
}

// parsePyIntString reads pydantic's integer strings: surrounding
// whitespace, a sign, ASCII digits with single underscores between them,
// optionally followed by "." and at least one zero. big reports a value
// beyond int64.
func parsePyIntString(s string) (n int64, big, isInt bool) {
	s = strings.TrimFunc(s, unicode.IsSpace)
	if i := strings.IndexByte(s, '.'); i >= 0 {
		if i+1 == len(s) || strings.Trim(s[i+1:], "0") != "" {
			return 0, false, false
		}
		s = s[:i]
	}
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return 0, false, false
	}
	digits := strings.ReplaceAll(s, "_", "")
	for i := 0; i < len(digits); i++ {
		if !isDigit(digits[i]) {
			return 0, false, false
		}
	}
	u, err := strconv.ParseUint(digits, 10, 63)
	if err != nil {
		return 0, true, true
	}
	if neg {
		return -int64(u), false, true
	}
	return int64(u), false, true
}

// pyFloat: a float is itself, an integer or boolean becomes a float, a
// string is parsed as Python's float() does.
func (w *normalizer) pyFloat(v any) (result, *normError) {
	var f float64
	ex := lax
	switch x := v.(type) {
	case float64:
		f, ex = x, exact
	case int64:
		f, ex = float64(x), strict
	case bool:
		if x {
			f = 1
		}
	case string:
		var good bool
		if f, good = parsePyFloatString(x); !good {
			return result{}, w.fail("float_parsing", "%q is not a number", jsonval.Truncate(x, 80))
		}
	default:
		return result{}, w.fail("float_type", "expected a number, found %s", jsonKind(v))
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return result{}, w.fatal("float.non_finite", "%v is not finite, which the host cannot hash", f)
	}
	return ok(f, ex)
}

// parsePyFloatString reads Python's float() syntax: whitespace, a sign,
// digits with single underscores, an optional fraction and exponent, or
// inf/infinity/nan in any case.
func parsePyFloatString(s string) (float64, bool) {
	s = strings.TrimFunc(s, unicode.IsSpace)
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return 0, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		if strings.HasPrefix(s, "-") {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	var b strings.Builder
	digits, prevDigit := 0, false
	seenDot, seenExp := false, false
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case isDigit(c):
			digits++
			prevDigit = true
			b.WriteByte(c)
			continue
		case c == '_':
			if !prevDigit || i+1 >= len(body) || !isDigit(body[i+1]) {
				return 0, false
			}
		case c == '.' && !seenDot && !seenExp:
			seenDot = true
			b.WriteByte(c)
		case (c == 'e' || c == 'E') && !seenExp && digits > 0:
			seenExp = true
			b.WriteByte(c)
			if i+1 < len(body) && (body[i+1] == '+' || body[i+1] == '-') {
				i++
				b.WriteByte(body[i])
			}
			if i+1 >= len(body) || !isDigit(body[i+1]) {
				return 0, false
			}
		default:
			return 0, false
		}
		prevDigit = false
	}
	if digits == 0 {
		return 0, false
	}
	f, err := strconv.ParseFloat(b.String(), 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	if strings.HasPrefix(s, "-") {
		f = -f
	}
	return f, true
}

// pyBool: booleans, 0 and 1 (also as floats), and the strings pydantic
// knows, in any case.
func (w *normalizer) pyBool(v any) (result, *normError) {
	switch x := v.(type) {
	case bool:
		return ok(x, exact)
	case int64:
		if x == 0 || x == 1 {
			return ok(x == 1, lax)
		}
	case float64:
		if x == 0 || x == 1 {
			return ok(x == 1, lax)
		}
	case string:
		switch strings.ToLower(x) {
		case "1", "on", "t", "true", "y", "yes":
			return ok(true, lax)
		case "0", "off", "f", "false", "n", "no":
			return ok(false, lax)
		}
	default:
		return result{}, w.fail("bool_type", "expected a boolean, found %s", jsonKind(v))
	}
	return result{}, w.fail("bool_parsing", "%s is not a boolean", jsonval.Describe(v))
}

// temporal parses date-times, dates, times and durations from strings and
// numbers (unix timestamps, seconds) and writes pydantic's ISO forms.
func (w *normalizer) temporal(k pyKind, v any) (result, *normError) {
	p := temporalParsers[k]
	var out, reason string
	switch x := v.(type) {
	case string:
		out, reason = p.fromString(x)
	case int64, float64:
		out, reason = p.fromNumber(x)
	case bool:
		if k != kindDuration { // a bool is an int, which only timedelta takes
			return result{}, w.fail(p.typeRule, "expected a string, found %s", jsonKind(v))
		}
		out, reason = p.fromNumber(x)
	default:
		return result{}, w.fail(p.typeRule, "expected a string, found %s", jsonKind(v))
	}
	if reason != "" {
		return result{}, w.fail(p.rule, "%s: %s", jsonval.Describe(v), reason)
	}
	return ok(out, lax)
}

// temporalParser reads one temporal type and writes pydantic's form, or
// the reason pydantic refuses.
type temporalParser struct {
	rule, typeRule string
	fromString     func(string) (string, string)
	fromNumber     func(any) (string, string)
}

var temporalParsers = map[pyKind]temporalParser{
	kindDateTime: {"datetime_parsing", "datetime_type",
		func(s string) (string, string) { t, r := parsePyDateTime(s); return t.dateTimeString(), r },
		func(v any) (string, string) { t, r := pyDateTimeFromNumber(v); return t.dateTimeString(), r }},
	kindDate: {"date_parsing", "date_type",
		func(s string) (string, string) { t, r := parsePyDate(s); return t.dateString(), r },
		func(v any) (string, string) { t, r := dateOf(pyDateTimeFromNumber(v)); return t.dateString(), r }},
	kindTime: {"time_parsing", "time_type",
		func(s string) (string, string) { t, r := parsePyTime(s); return t.timeString(), r },
		func(v any) (string, string) { t, r := pyTimeFromNumber(v); return t.timeString(), r }},
	kindDuration: {"time_delta_parsing", "time_delta_type",
		func(s string) (string, string) { d, r := parsePyDuration(s); return d.String(), r },
		func(v any) (string, string) { d, r := pyDurationFromNumber(v); return d.String(), r }},
}

// pyTimeFromNumber reads seconds since midnight (UTC).
func pyTimeFromNumber(v any) (pyDateTime, string) {
	var secs, micro int64
	switch x := v.(type) {
	case int64:
		secs = x
	case float64:
		fl := math.Floor(x)
		if fl < 0 || fl >= 86400 {
			return pyDateTime{}, "numeric times may not exceed 86,399 seconds"
		}
		secs, micro = int64(fl), int64(math.Round((x-fl)*1e6))
	}
	if micro >= 1_000_000 {
		secs += micro / 1_000_000
		micro %= 1_000_000
	}
	if secs < 0 {
		return pyDateTime{}, "time in seconds should be positive"
	}
	if secs >= 86400 {
		return pyDateTime{}, "numeric times may not exceed 86,399 seconds"
	}
	return pyDateTime{hour: int(secs / 3600), minute: int(secs % 3600 / 60), second: int(secs % 60), micro: int(micro), hasTZ: true}, ""
}

// pyDurationFromNumber reads seconds (a boolean is 0 or 1 second).
func pyDurationFromNumber(v any) (pyDuration, string) {
	var d pyDuration
	switch x := v.(type) {
	case bool:
		if x {
			d.second = 1
		}
	case int64:
		if x < 0 {
			d.negative, x = true, -x
		}
		d.day, d.second = x/86400, x%86400
	case float64:
		if x < 0 {
			d.negative, x = true, -x
		}
		if x >= (maxDurationDays+1)*86400 {
			return d, "durations may not exceed 999,999,999 days"
		}
		whole := math.Floor(x)
		d.day, d.second = int64(whole)/86400, int64(whole)%86400
		d.micro = int64(math.Round((x - whole) * 1e6))
	}
	if reason := d.normalize(); reason != "" {
		return pyDuration{}, reason
	}
	return d, ""
}

// purePosixPath is str(pathlib.PurePosixPath(s)): repeated slashes
// collapse (two leading ones are kept), "." components and a trailing
// slash go, and the empty path is ".".
func purePosixPath(s string) string {
	lead := ""
	switch {
	case strings.HasPrefix(s, "//") && !strings.HasPrefix(s, "///"):
		lead = "//"
	case strings.HasPrefix(s, "/"):
		lead = "/"
	}
	var parts []string
	for p := range strings.SplitSeq(s, "/") {
		if p != "" && p != "." {
			parts = append(parts, p)
		}
	}
	out := lead + strings.Join(parts, "/")
	if out == "" {
		return "."
	}
	return out
}

// pyDecimal: Decimal from an integer, a float (through its repr, as
// Decimal(str(f))) or a string, written as str(Decimal).
func (w *normalizer) pyDecimal(v any) (result, *normError) {
	var d pyDec
	switch x := v.(type) {
	case int64:
		d = decFromInt(x)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return result{}, w.fail("finite_number", "%v is not finite", x)
		}
		d = decFromFloat(x)
	case string:
		var good bool
		if d, good = parseDecimalString(x); !good {
			return result{}, w.fail("decimal_parsing", "%q is not a decimal", jsonval.Truncate(x, 80))
		}
	default:
		return result{}, w.fail("decimal_type", "expected a number or a string, found %s", jsonKind(v))
	}
	return ok(d.String(), lax)
}

// pyDec is a finite Python Decimal: sign, coefficient digits (no leading
// zeros, "0" for zero) and exponent.
type pyDec struct {
	neg  bool
	coef string
	exp  int
}

func decFromInt(n int64) pyDec {
	if n < 0 {
		return pyDec{neg: true, coef: strconv.FormatUint(uint64(-n), 10)}
	}
	return pyDec{coef: strconv.FormatInt(n, 10)}
}

// decFromFloat is Decimal(repr(f)): repr writes the shortest digits in
// fixed notation when the decimal point falls in -4 < point <= 16 (an
// integral value gets ".0"), else in exponent notation.
func decFromFloat(f float64) pyDec {
	neg := math.Signbit(f)
	digits, point := shortestDigits(math.Abs(f))
	d := pyDec{neg: neg}
	if point > -4 && point <= 16 {
		switch {
		case point >= len(digits): // integral: "ddd000.0"
			d.coef = digits + strings.Repeat("0", point-len(digits)) + "0"
			d.exp = -1
		case point > 0:
			d.coef = digits
			d.exp = point - len(digits)
		default: // "0.000ddd"
			d.coef = digits
			d.exp = point - len(digits)
		}
	} else {
		d.coef = digits
		d.exp = point - len(digits)
	}
	d.coef = trimCoef(d.coef)
	return d
}

// shortestDigits returns the shortest round-trip digits of f >= 0 and the
// position of the decimal point (f = 0.digits × 10^point); zero is "0", 1.
func shortestDigits(f float64) (string, int) {
	if f == 0 {
		return "0", 1
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expStr, _ := strings.Cut(s, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	return digits, exp + 1
}

func trimCoef(c string) string {
	c = strings.TrimLeft(c, "0")
	if c == "" {
		return "0"
	}
	return c
}

// parseDecimalString reads pydantic's decimal strings: surrounding
// whitespace, underscores (dropped), a sign, decimal digits (any script's,
// as Python's Decimal reads them) with an optional point and exponent.
// Infinity and NaN are refused, as pydantic refuses them.
func parseDecimalString(s string) (pyDec, bool) {
	s = strings.TrimFunc(s, unicode.IsSpace)
	s = strings.ReplaceAll(s, "_", "")
	var d pyDec
	if s != "" && (s[0] == '+' || s[0] == '-') {
		d.neg = s[0] == '-'
		s = s[1:]
	}
	var coef strings.Builder
	frac, digits := 0, 0
	seenDot := false
	i := 0
	for i < len(s) {
		r, size := rune(s[i]), 1
		if r >= 0x80 {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		if dv, isD := digitValue(r); isD {
			coef.WriteByte(byte('0' + dv))
			digits++
			if seenDot {
				frac++
			}
			i += size
			continue
		}
		if r == '.' && !seenDot {
			seenDot = true
			i++
			continue
		}
		break
	}
	if digits == 0 {
		return pyDec{}, false
	}
	exp := 0
	if i < len(s) {
		if s[i] != 'e' && s[i] != 'E' {
			return pyDec{}, false
		}
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || strings.HasPrefix(s[i+1:], "+-") {
			return pyDec{}, false
		}
		exp = e
	}
	d.coef = trimCoef(coef.String())
	d.exp = exp - frac
	return d, true
}

// digitValue is the value of a Unicode decimal digit (category Nd, whose
// ranges each run from a zero in groups of ten).
func digitValue(r rune) (int, bool) {
	if '0' <= r && r <= '9' {
		return int(r - '0'), true
	}
	if r < 0x80 || !unicode.Is(unicode.Nd, r) {
		return 0, false
	}
	for _, rg := range unicode.Nd.R16 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	return 0, false
}

// String is Python's str(Decimal) (the to-scientific-string rule).
func (d pyDec) String() string {
	var b strings.Builder
	if d.neg {
		b.WriteByte('-')
	}
	n := len(d.coef)
	adjusted := d.exp + n - 1
	switch {
	case d.exp <= 0 && adjusted >= -6:
		switch {
		case d.exp == 0:
			b.WriteString(d.coef)
		case n > -d.exp:
			b.WriteString(d.coef[:n+d.exp])
			b.WriteByte('.')
			b.WriteString(d.coef[n+d.exp:])
		default:
			b.WriteString("0.")
			b.WriteString(strings.Repeat("0", -d.exp-n))
			b.WriteString(d.coef)
		}
	default:
		b.WriteByte(d.coef[0])
		if n > 1 {
			b.WriteByte('.')
			b.WriteString(d.coef[1:])
		}
		b.WriteByte('E')
		if adjusted >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(adjusted))
	}
	return b.String()
}
