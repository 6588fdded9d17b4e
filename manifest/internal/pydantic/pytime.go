package pydantic

import (
	"math"
	"strconv"
	"strings"
)

// Dates, times and durations as pydantic 2 reads them from strings (its
// speedate parser, lax mode) and writes them in model_dump(mode="json").
// Each parser returns ok=false where pydantic refuses the input; the
// reasons are the ones pydantic names, for the error detail.

// pyDateTime is a parsed date-time. tz is the UTC offset in seconds when
// hasTZ is set (pydantic keeps the offset it read; it never converts).
type pyDateTime struct {
	year, month, day     int
	hour, minute, second int
	micro                int
	tz                   int
	hasTZ                bool
}

const (
	// msWatershed: a unix timestamp whose magnitude exceeds it is read as
	// milliseconds.
	msWatershed = 20_000_000_000
	// unixYear1 and unixYear9999End bound the timestamps Python's datetime
	// can hold (0001-01-01T00:00:00 and 9999-12-31T23:59:59).
	unixYear1       = -62_135_596_800
	unixYear9999End = 253_402_300_799
)

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func twoDigits(s string, i int) (int, bool) {
	if i+2 > len(s) || !isDigit(s[i]) || !isDigit(s[i+1]) {
		return 0, false
	}
	return int(s[i]-'0')*10 + int(s[i+1]-'0'), true
}

func daysIn(year, month int) int {
	switch month {
	case 4, 6, 9, 11:
		return 30
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	}
	return 31
}

// parseDatePrefix reads "YYYY-MM-DD" from the start of s.
func parseDatePrefix(s string) (y, m, d int, reason string) {
	if len(s) < 10 {
		return 0, 0, 0, "input is too short"
	}
	for i := range 4 {
		if !isDigit(s[i]) {
			return 0, 0, 0, "invalid character in year"
		}
		y = y*10 + int(s[i]-'0')
	}
	if s[4] != '-' || s[7] != '-' {
		return 0, 0, 0, "invalid date separator, expected `-`"
	}
	m, ok := twoDigits(s, 5)
	if !ok {
		return 0, 0, 0, "invalid character in month"
	}
	d, ok = twoDigits(s, 8)
	if !ok {
		return 0, 0, 0, "invalid character in day"
	}
	if m < 1 || m > 12 {
		return 0, 0, 0, "month value is outside expected range of 1-12"
	}
	if d < 1 || d > daysIn(y, m) {
		return 0, 0, 0, "day value is outside expected range"
	}
	if y == 0 {
		return 0, 0, 0, "year 0 is out of range"
	}
	return y, m, d, ""
}

// parseClock reads "HH:MM[:SS[(.|,)F+]]" at s[i:] and returns the index
// after it. Fraction digits beyond six are dropped, as pydantic truncates.
func parseClock(s string, i int) (h, mi, sec, micro, end int, reason string) {
	if len(s)-i < 5 {
		return 0, 0, 0, 0, 0, "input is too short"
	}
	var ok bool
	if h, ok = twoDigits(s, i); !ok {
		return 0, 0, 0, 0, 0, "invalid character in hour"
	}
	if s[i+2] != ':' {
		return 0, 0, 0, 0, 0, "invalid time separator, expected `:`"
	}
	if mi, ok = twoDigits(s, i+3); !ok {
		return 0, 0, 0, 0, 0, "invalid character in minute"
	}
	if h > 23 {
		return 0, 0, 0, 0, 0, "hour value is outside expected range of 0-23"
	}
	if mi > 59 {
		return 0, 0, 0, 0, 0, "minute value is outside expected range of 0-59"
	}
	end = i + 5
	if end < len(s) && s[end] == ':' {
		if sec, ok = twoDigits(s, end+1); !ok {
			return 0, 0, 0, 0, 0, "invalid character in second"
		}
		if sec > 59 {
			return 0, 0, 0, 0, 0, "second value is outside expected range of 0-59"
		}
		end += 3
		if end < len(s) && (s[end] == '.' || s[end] == ',') {
			end++
			n := 0
			for end < len(s) && isDigit(s[end]) {
				if n < 6 {
					micro = micro*10 + int(s[end]-'0')
				}
				n++
				end++
			}
			if n == 0 {
				return 0, 0, 0, 0, 0, "second fraction digits missing after `.`"
			}
			for k := n; k < 6; k++ {
				micro *= 10
			}
		}
	}
	return h, mi, sec, micro, end, ""
}

// parseOffset reads an optional "Z", "±HH:MM", "±HHMM" (or U+2212 minus)
// at s[i:], which must end s.
func parseOffset(s string, i int) (tz int, has bool, reason string) {
	if i >= len(s) {
		return 0, false, ""
	}
	sign := 1
	switch {
	case s[i] == 'Z' || s[i] == 'z':
		if i+1 != len(s) {
			return 0, false, "unexpected extra characters at the end of the input"
		}
		return 0, true, ""
	case s[i] == '+':
		i++
	case s[i] == '-':
		sign = -1
		i++
	case strings.HasPrefix(s[i:], "\u2212"):
		sign = -1
		i += len("\u2212")
	default:
		return 0, false, "invalid timezone sign"
	}
	h, ok := twoDigits(s, i)
	if !ok {
		return 0, false, "invalid timezone hour"
	}
	i += 2
	if i < len(s) && s[i] == ':' {
		i++
	}
	m, ok := twoDigits(s, i)
	if !ok {
		return 0, false, "invalid timezone minute"
	}
	if m >= 60 {
		return 0, false, "timezone minute value is outside expected range of 0-59"
	}
	tz = sign * (h*3600 + m*60)
	if tz >= 86400 || tz <= -86400 {
		return 0, false, "timezone offset must be less than 24 hours"
	}
	if i+2 != len(s) {
		return 0, false, "unexpected extra characters at the end of the input"
	}
	return tz, true, ""
}

// parseDateTimeRFC reads "YYYY-MM-DD(T|t| |_)HH:MM[:SS[.f]][tz]".
func parseDateTimeRFC(s string) (pyDateTime, string) {
	y, m, d, reason := parseDatePrefix(s)
	if reason != "" {
		return pyDateTime{}, reason
	}
	if len(s) == 10 {
		return pyDateTime{year: y, month: m, day: d}, ""
	}
	switch s[10] {
	case 'T', 't', ' ', '_':
	default:
		return pyDateTime{}, "invalid datetime separator, expected `T`, `t`, `_` or space"
	}
	h, mi, sec, micro, end, reason := parseClock(s, 11)
	if reason != "" {
		return pyDateTime{}, reason
	}
	tz, has, reason := parseOffset(s, end)
	if reason != "" {
		return pyDateTime{}, reason
	}
	return pyDateTime{year: y, month: m, day: d, hour: h, minute: mi, second: sec, micro: micro, tz: tz, hasTZ: has}, ""
}

// parseTimestampString reads the numeric fallback: a string with a '.'
// is a float ([+-]digits.digits[e[+-]digits], at least one digit), one
// without is an int64 ([+-]digits).
func parseTimestampString(s string) (secs int64, micro int64, ok bool) {
	if strings.IndexByte(s, '.') >= 0 {
		f, ok := parseDottedFloat(s)
		if !ok {
			return 0, 0, false
		}
		return floatTimestamp(f)
	}
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	if i == len(s) {
		return 0, 0, false
	}
	for j := i; j < len(s); j++ {
		if !isDigit(s[j]) {
			return 0, 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return intTimestamp(n)
}

// parseDottedFloat parses [+-](d+.d*|.d+)([eE][+-]?d+)? exactly as
// rounded by a correct decimal-to-binary conversion.
func parseDottedFloat(s string) (float64, bool) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if i >= len(s) || s[i] != '.' {
		return 0, false
	}
	i++
	for i < len(s) && isDigit(s[i]) {
		i++
		digits++
	}
	if digits == 0 {
		return 0, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for i < len(s) && isDigit(s[i]) {
			i++
			exp++
		}
		if exp == 0 {
			return 0, false
		}
	}
	if i != len(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	return f, true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// intTimestamp splits an integer unix timestamp (seconds, or milliseconds
// beyond the watershed) into seconds and microseconds.
func intTimestamp(n int64) (secs, micro int64, ok bool) {
	if n == math.MinInt64 {
		return 0, 0, false
	}
	abs := n
	if abs < 0 {
		abs = -abs
	}
	if abs <= msWatershed {
		return n, 0, true
	}
	secs, micro = n/1000, n%1000*1000
	if micro < 0 {
		secs--
		micro += 1_000_000
	}
	return secs, micro, true
}

// floatTimestamp is intTimestamp for a float: milliseconds beyond the
// watershed, then floor to seconds and round the fraction to
// microseconds, in float64 arithmetic as pydantic does.
func floatTimestamp(f float64) (secs, micro int64, ok bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, 0, false
	}
	if math.Abs(f) > msWatershed {
		f /= 1000
	}
	fl := math.Floor(f)
	if fl < unixYear1-1 || fl > unixYear9999End+1 {
		return 0, 0, false
	}
	secs = int64(fl)
	micro = int64(math.Round((f - fl) * 1e6))
	return secs, micro, true
}

// dateTimeFromUnix builds the UTC date-time of secs + micro µs.
func dateTimeFromUnix(secs, micro int64) (pyDateTime, string) {
	if micro >= 1_000_000 {
		secs += micro / 1_000_000
		micro %= 1_000_000
	}
	if secs < unixYear1 {
		return pyDateTime{}, "dates before 0001 are not supported as unix timestamps"
	}
	if secs > unixYear9999End {
		return pyDateTime{}, "dates after 9999 are not supported as unix timestamps"
	}
	days := secs / 86400
	rem := secs % 86400
	if rem < 0 {
		rem += 86400
		days--
	}
	y, m, d := civilFromDays(days)
	return pyDateTime{year: y, month: m, day: d, hour: int(rem / 3600), minute: int(rem % 3600 / 60), second: int(rem % 60),
		micro: int(micro), hasTZ: true}, ""
}

// civilFromDays converts days since 1970-01-01 to a proleptic Gregorian
// date (Howard Hinnant's algorithm).
func civilFromDays(z int64) (int, int, int) {
	z += 719468
	era := z / 146097
	if z < 0 && z%146097 != 0 {
		era = (z - 146096) / 146097
	}
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y := yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d := doy - (153*mp+2)/5 + 1
	m := mp + 3
	if m > 12 {
		m -= 12
	}
	if m <= 2 {
		y++
	}
	return int(y), int(m), int(d)
}

// parsePyDateTime is pydantic's datetime from a string: the RFC 3339-like
// form, else a unix timestamp, else a bare date at midnight.
func parsePyDateTime(s string) (pyDateTime, string) {
	dt, reason := parseDateTimeRFC(s)
	if reason == "" {
		return dt, ""
	}
	if secs, micro, ok := parseTimestampString(s); ok {
		return dateTimeFromUnix(secs, micro)
	}
	return pyDateTime{}, reason
}

// pyDateTimeFromNumber is pydantic's datetime from a JSON number (a unix
// timestamp).
func pyDateTimeFromNumber(v any) (pyDateTime, string) {
	var secs, micro int64
	var ok bool
	switch x := v.(type) {
	case int64:
		secs, micro, ok = intTimestamp(x)
	case float64:
		secs, micro, ok = floatTimestamp(x)
	}
	if !ok {
		return pyDateTime{}, "timestamp out of range"
	}
	return dateTimeFromUnix(secs, micro)
}

// parsePyDate is pydantic's date from a string: "YYYY-MM-DD", else any
// date-time (or timestamp) whose time of day is exactly zero.
func parsePyDate(s string) (pyDateTime, string) {
	if len(s) == 10 {
		if y, m, d, reason := parseDatePrefix(s); reason == "" {
			return pyDateTime{year: y, month: m, day: d}, ""
		}
	}
	return dateOf(parsePyDateTime(s))
}

// dateOf is the date of a date-time whose time of day is exactly zero.
func dateOf(dt pyDateTime, reason string) (pyDateTime, string) {
	if reason != "" {
		return pyDateTime{}, reason
	}
	if dt.hour != 0 || dt.minute != 0 || dt.second != 0 || dt.micro != 0 {
		return pyDateTime{}, "datetimes provided to dates should have zero time"
	}
	return pyDateTime{year: dt.year, month: dt.month, day: dt.day}, ""
}

// parsePyTime is pydantic's time from a string: "HH:MM[:SS[.f]][tz]".
func parsePyTime(s string) (pyDateTime, string) {
	h, mi, sec, micro, end, reason := parseClock(s, 0)
	if reason != "" {
		return pyDateTime{}, reason
	}
	tz, has, reason := parseOffset(s, end)
	if reason != "" {
		return pyDateTime{}, reason
	}
	return pyDateTime{hour: h, minute: mi, second: sec, micro: micro, tz: tz, hasTZ: has}, ""
}

func appendN(b []byte, v, width int) []byte {
	var buf [12]byte
	s := strconv.AppendInt(buf[:0], int64(v), 10)
	for range width - len(s) {
		b = append(b, '0')
	}
	return append(b, s...)
}

func appendClock(b []byte, t pyDateTime) []byte {
	b = appendN(b, t.hour, 2)
	b = append(b, ':')
	b = appendN(b, t.minute, 2)
	b = append(b, ':')
	b = appendN(b, t.second, 2)
	if t.micro != 0 {
		b = append(b, '.')
		b = appendN(b, t.micro, 6)
	}
	if t.hasTZ {
		if t.tz == 0 {
			return append(b, 'Z')
		}
		off := t.tz
		if off < 0 {
			b = append(b, '-')
			off = -off
		} else {
			b = append(b, '+')
		}
		b = appendN(b, off/3600, 2)
		b = append(b, ':')
		b = appendN(b, off%3600/60, 2)
	}
	return b
}

func appendDate(b []byte, t pyDateTime) []byte {
	b = appendN(b, t.year, 4)
	b = append(b, '-')
	b = appendN(b, t.month, 2)
	b = append(b, '-')
	return appendN(b, t.day, 2)
}

// dateTimeString, dateString and timeString are pydantic's JSON forms.
func (t pyDateTime) dateTimeString() string {
	b := make([]byte, 0, 32)
	b = appendDate(b, t)
	b = append(b, 'T')
	return string(appendClock(b, t))
}

func (t pyDateTime) dateString() string { return string(appendDate(make([]byte, 0, 10), t)) }

func (t pyDateTime) timeString() string { return string(appendClock(make([]byte, 0, 24), t)) }

// instant returns microseconds since the epoch in UTC (aware) or in the
// naive clock: the key Python compares equal date-times by.
func (t pyDateTime) instant() int64 {
	days := daysFromCivil(t.year, t.month, t.day)
	s := days*86400 + int64(t.hour*3600+t.minute*60+t.second) - int64(t.tz)
	return s*1_000_000 + int64(t.micro)
}

// daysFromCivil is the inverse of civilFromDays.
func daysFromCivil(y, m, d int) int64 {
	yy := int64(y)
	if m <= 2 {
		yy--
	}
	era := yy / 400
	if yy < 0 && yy%400 != 0 {
		era = (yy - 399) / 400
	}
	yoe := yy - era*400
	mm := int64(m)
	if mm > 2 {
		mm -= 3
	} else {
		mm += 9
	}
	doy := (153*mm+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// pyDuration is a timedelta in sign-magnitude form, as pydantic parses and
// prints it.
type pyDuration struct {
	negative bool
	day      int64
	second   int64 // 0..86399 once normalized
	micro    int64 // 0..999999 once normalized
}

const maxDurationDays = 999_999_999

func (d *pyDuration) normalize() string {
	if d.micro >= 1_000_000 {
		d.second += d.micro / 1_000_000
		d.micro %= 1_000_000
	}
	if d.second >= 86400 {
		d.day += d.second / 86400
		d.second %= 86400
	}
	if d.day > maxDurationDays {
		return "durations may not exceed 999,999,999 days"
	}
	if d.negative && d.day == maxDurationDays && (d.second != 0 || d.micro != 0) {
		// Python's timedelta holds -999999999 days at least; the magnitude
		// here needs one more day.
		return "duration is out of timedelta's range"
	}
	if d.day == 0 && d.second == 0 && d.micro == 0 {
		d.negative = false
	}
	return ""
}

// parsePyDuration is pydantic's timedelta from a string: ISO 8601
// ("P1DT2H", weeks, fractions in the last quantity), "[-]HH:MM:SS[.f]"
// with unbounded hours, or "N day[s][,] HH:MM:SS", each with an optional
// leading sign.
func parsePyDuration(s string) (pyDuration, string) {
	var d pyDuration
	off := 0
	if s == "" {
		return d, "input is too short"
	}
	switch s[0] {
	case '+':
		off = 1
	case '-':
		d.negative = true
		off = 1
	}
	var reason string
	switch {
	case off < len(s) && s[off] == 'P':
		reason = d.parseISO(s, off+1)
	case strings.ContainsAny(s, "dD") || len(s) < 5:
		reason = d.parseDaysTime(s, off)
	default:
		reason = d.parseHours(s, off)
	}
	if reason != "" {
		return pyDuration{}, reason
	}
	if reason := d.normalize(); reason != "" {
		return pyDuration{}, reason
	}
	return d, ""
}

const u32max = math.MaxUint32

// durNumber reads digits at s[i:] into a value that must fit in 32 bits.
func durNumber(s string, i int) (v int64, end int, reason string) {
	if i >= len(s) || !isDigit(s[i]) {
		return 0, 0, "invalid digit in duration"
	}
	for i < len(s) && isDigit(s[i]) {
		v = v*10 + int64(s[i]-'0')
		if v > u32max {
			return 0, 0, "a numeric value in the duration is too large"
		}
		i++
	}
	return v, i, ""
}

func (d *pyDuration) parseISO(s string, i int) string {
	start := i
	gotT, lastFrac := false, false
	for i < len(s) {
		if s[i] == 'T' {
			if gotT {
				return "`t` character repeated in duration"
			}
			gotT = true
			i++
			continue
		}
		v, end, reason := durNumber(s, i)
		if reason != "" {
			return reason
		}
		var frac float64
		hasFrac := false
		if end < len(s) && (s[end] == '.' || s[end] == ',') {
			hasFrac = true
			num, den := 0.0, 1.0
			end++
			for end < len(s) && isDigit(s[end]) {
				num = num*10 + float64(s[end]-'0')
				den *= 10
				end++
			}
			frac = num / den
		}
		if lastFrac {
			return "quantity fraction invalid in duration"
		}
		lastFrac = hasFrac
		i = end
		if i >= len(s) {
			if gotT {
				return "quantity invalid in time part of duration"
			}
			return "quantity invalid in date part of duration"
		}
		mult, unit := isoUnit(s[i], gotT)
		if mult == 0 {
			return unit
		}
		if gotT {
			d.second += mult * v
			if hasFrac {
				d.addSeconds(frac * float64(mult))
			}
		} else {
			d.day += mult * v
			if hasFrac {
				extraDays := frac * float64(mult)
				fullDays := math.Trunc(extraDays)
				d.day += int64(fullDays)
				d.addSeconds((extraDays - fullDays) * 86400)
			}
		}
		if d.day > u32max || d.second > u32max || d.micro > u32max {
			return "a numeric value in the duration is too large"
		}
		i++
	}
	if i-start < 2 { // "P", "PT", after any sign
		return "input is too short"
	}
	return ""
}

// isoUnit is the size of an ISO 8601 duration unit, in seconds after "T"
// or in days before it (M is minutes after "T", 30-day months before),
// or 0 and the refusal.
func isoUnit(c byte, timePart bool) (int64, string) {
	if timePart {
		switch c {
		case 'H':
			return 3600, ""
		case 'M':
			return 60, ""
		case 'S':
			return 1, ""
		}
		return 0, "quantity invalid in time part of duration"
	}
	switch c {
	case 'Y':
		return 365, ""
	case 'M':
		return 30, ""
	case 'W':
		return 7, ""
	case 'D':
		return 1, ""
	}
	return 0, "quantity invalid in date part of duration"
}

// addSeconds adds a fractional number of seconds: whole seconds, and the
// rest rounded to microseconds.
func (d *pyDuration) addSeconds(x float64) {
	full := math.Trunc(x)
	d.second += int64(full)
	d.micro += int64(math.Round((x - full) * 1e6))
}

func (d *pyDuration) parseDaysTime(s string, i int) string {
	day, i, reason := durNumber(s, i)
	if reason != "" {
		return reason
	}
	d.day = day
	if i < len(s) && s[i] == ' ' {
		i++
	} else if i >= len(s) || (s[i] != 'd' && s[i] != 'D') {
		return `"day" identifier in duration not correctly formatted`
	}
	if i >= len(s) || (s[i] != 'd' && s[i] != 'D') {
		return `"day" identifier in duration not correctly formatted`
	}
	i++
	if i < len(s) && (s[i] == 'a' || s[i] == 'A') {
		if i+1 >= len(s) || (s[i+1] != 'y' && s[i+1] != 'Y') {
			return `"day" identifier in duration not correctly formatted`
		}
		i += 2
		if i < len(s) && (s[i] == 's' || s[i] == 'S') {
			i++
		}
	}
	if i < len(s) && s[i] == ',' {
		i++
	}
	if i < len(s) && s[i] == ' ' {
		i++
	}
	if i == len(s) {
		return ""
	}
	h, mi, sec, micro, end, reason := parseClock(s, i)
	if reason != "" {
		if strings.HasPrefix(reason, "hour value") {
			return "durations may not exceed 999,999,999 hours"
		}
		return reason
	}
	if end != len(s) {
		return "unexpected extra characters at the end of the input"
	}
	d.second = int64(h*3600 + mi*60 + sec)
	d.micro = int64(micro)
	return ""
}

// parseHours reads "H+:MM[:SS[.f]]": any number of hours (up to ten
// digits), the rest as a clock.
func (d *pyDuration) parseHours(s string, i int) string {
	colon := strings.IndexByte(s[i:], ':')
	if colon < 0 {
		return "invalid character in hour"
	}
	hourPart, rest := s[i:i+colon], s[i+colon+1:]
	if len(s)-i < 5 {
		return "input is too short"
	}
	if len(hourPart) > 10 {
		return "durations may not exceed 999,999,999 hours"
	}
	var hour int64
	for j := 0; j < len(hourPart); j++ {
		if !isDigit(hourPart[j]) {
			return "invalid character in hour"
		}
		hour = hour*10 + int64(hourPart[j]-'0')
	}
	if hour > 2_400_000_000 { // pydantic's bound (24 × 10^8), despite its message
		return "durations may not exceed 999,999,999 hours"
	}
	if len(rest) > 12 { // "MM:SS.ffffff": longer fractions are cut
		rest = rest[:12]
	}
	clock := "00:" + rest
	_, mi, sec, micro, end, reason := parseClock(clock, 0)
	if reason != "" {
		return reason
	}
	if end != len(clock) {
		return "unexpected extra characters at the end of the input"
	}
	d.day = hour / 24
	d.second = hour%24*3600 + int64(mi*60+sec)
	d.micro = int64(micro)
	return ""
}

// String is pydantic's ISO 8601 form of a timedelta: "-" when negative,
// days as years (365 days) and days, the rest as hours, minutes and
// seconds with the fraction's trailing zeros cut; "PT0S" for zero.
func (d pyDuration) String() string {
	b := make([]byte, 0, 24)
	if d.negative {
		b = append(b, '-')
	}
	b = append(b, 'P')
	if y := d.day / 365; y != 0 {
		b = strconv.AppendInt(b, y, 10)
		b = append(b, 'Y')
	}
	if dd := d.day % 365; dd != 0 {
		b = strconv.AppendInt(b, dd, 10)
		b = append(b, 'D')
	}
	if d.second != 0 || d.micro != 0 {
		b = append(b, 'T')
		if h := d.second / 3600; h != 0 {
			b = strconv.AppendInt(b, h, 10)
			b = append(b, 'H')
		}
		if m := d.second % 3600 / 60; m != 0 {
			b = strconv.AppendInt(b, m, 10)
			b = append(b, 'M')
		}
		if sec := d.second % 60; sec != 0 || d.micro != 0 {
			b = strconv.AppendInt(b, sec, 10)
			if d.micro != 0 {
				b = append(b, '.')
				frac := appendN(nil, int(d.micro), 6)
				b = append(b, strings.TrimRight(string(frac), "0")...)
			}
			b = append(b, 'S')
		}
	}
	if d.day == 0 && d.second == 0 && d.micro == 0 {
		b = append(b, "T0S"...)
	}
	return string(b)
}

// pyState is the timedelta as Python holds it: days (signed), seconds in
// 0..86399 and microseconds in 0..999999. Python hashes and compares
// timedeltas by it.
func (d pyDuration) pyState() (days, seconds, micros int64) {
	if !d.negative {
		return d.day, d.second, d.micro
	}
	days, seconds, micros = -d.day, -d.second, -d.micro
	if micros < 0 {
		micros += 1_000_000
		seconds--
	}
	if seconds < 0 {
		seconds += 86400
		days--
	}
	return days, seconds, micros
}
