package rs

import (
	"errors"
	"fmt"
	"time"
)

// Precision is how much of a W3C datetime was written.
type Precision uint8

// Precisions of the W3C Datetime profile (NOTE-datetime 1998). PrecFrac1
// to PrecFrac9 carry that many fractional-second digits.
const (
	PrecNone   Precision = iota // the zero Time: no value
	PrecYear                    // YYYY
	PrecMonth                   // YYYY-MM
	PrecDay                     // YYYY-MM-DD
	PrecMinute                  // YYYY-MM-DDThh:mmTZD
	PrecSecond                  // YYYY-MM-DDThh:mm:ssTZD
	PrecFrac1                   // one fractional digit; PrecFrac1+n-1 for n digits
)

// Time is a W3C datetime as written in a document: the instant, its UTC
// offset and its precision (up to nanoseconds; further digits are dropped).
// The zero Time means the attribute or element was absent.
type Time struct {
	t    time.Time
	prec Precision
}

// ErrDateTime is matched (errors.Is) by every datetime syntax error.
var ErrDateTime = errors.New("invalid W3C datetime")

// ErrNoTimeZone is matched by a datetime that has a time but no zone
// designator, which W3C Datetime forbids (RS-DT-2).
var ErrNoTimeZone = fmt.Errorf("%w: time without zone designator", ErrDateTime)

// NewTime returns t as a Time written to the second, or with as many
// fractional digits as t needs (up to nine).
func NewTime(t time.Time) Time {
	p := PrecSecond
	if ns := t.Nanosecond(); ns != 0 {
		d := 9
		for ns%10 == 0 {
			ns /= 10
			d--
		}
		p = PrecFrac1 + Precision(d-1)
	}
	return Time{t: t, prec: p}
}

// TimeWithPrecision returns t to be written with precision p.
func TimeWithPrecision(t time.Time, p Precision) Time { return Time{t: t, prec: p} }

// IsZero reports whether the Time is absent.
func (t Time) IsZero() bool { return t.prec == PrecNone }

// Time returns the instant (in the offset it was written with).
func (t Time) Time() time.Time { return t.t }

// Precision returns how much of the datetime was written.
func (t Time) Precision() Precision { return t.prec }

// Before reports whether t is an earlier instant than u.
func (t Time) Before(u Time) bool { return t.t.Before(u.t) }

// After reports whether t is a later instant than u.
func (t Time) After(u Time) bool { return t.t.After(u.t) }

// Equal reports whether t and u are the same instant (offsets may differ).
func (t Time) Equal(u Time) bool { return t.prec == PrecNone == (u.prec == PrecNone) && t.t.Equal(u.t) }

// Compare returns -1, 0 or +1 comparing instants.
func (t Time) Compare(u Time) int { return t.t.Compare(u.t) }

// Same reports whether t and u are identical as written: instant, offset
// and precision. Round trips preserve Same.
func (t Time) Same(u Time) bool {
	if t.prec != u.prec {
		return false
	}
	_, o1 := t.t.Zone()
	_, o2 := u.t.Zone()
	return o1 == o2 && t.t.Equal(u.t)
}

// String formats the Time as W3C datetime, or "" for the zero Time.
func (t Time) String() string { return string(t.AppendFormat(nil)) }

// ParseTime parses a W3C datetime: YYYY, YYYY-MM, YYYY-MM-DD,
// YYYY-MM-DDThh:mmTZD, YYYY-MM-DDThh:mm:ssTZD or with any number of
// fractional-second digits. TZD is Z or ±hh:mm and is required whenever a
// time is present. Date-only forms mean 00:00:00Z.
func ParseTime(s string) (Time, error) { return parseTimeBytes([]byte(s)) }

func parseTimeBytes(b []byte) (Time, error) {
	bad := func(why string) (Time, error) {
		return Time{}, fmt.Errorf("%w %q: %s", ErrDateTime, b, why)
	}
	num := func(i, n int) (int, bool) {
		if i+n > len(b) {
			return 0, false
		}
		v := 0
		for _, c := range b[i : i+n] {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	year, ok := num(0, 4)
	if !ok {
		return bad("expected a four-digit year")
	}
	month, day := 1, 1
	hour, minute, sec, nsec := 0, 0, 0, 0
	prec := PrecYear
	i := 4
	loc := time.UTC
	if i < len(b) {
		if b[i] != '-' {
			return bad("expected '-' after the year")
		}
		if month, ok = num(i+1, 2); !ok {
			return bad("expected a two-digit month")
		}
		i += 3
		prec = PrecMonth
	}
	if i < len(b) {
		if b[i] != '-' {
			return bad("expected '-' after the month")
		}
		if day, ok = num(i+1, 2); !ok {
			return bad("expected a two-digit day")
		}
		i += 3
		prec = PrecDay
	}
	if i < len(b) {
		if b[i] != 'T' {
			return bad("expected 'T' after the date")
		}
		if hour, ok = num(i+1, 2); !ok || i+3 >= len(b) || b[i+3] != ':' {
			return bad("expected hh:mm after 'T'")
		}
		if minute, ok = num(i+4, 2); !ok {
			return bad("expected hh:mm after 'T'")
		}
		i += 6
		prec = PrecMinute
		if i < len(b) && b[i] == ':' {
			if sec, ok = num(i+1, 2); !ok {
				return bad("expected two-digit seconds")
			}
			i += 3
			prec = PrecSecond
			if i < len(b) && b[i] == '.' {
				i++
				start := i
				for i < len(b) && b[i] >= '0' && b[i] <= '9' {
					if i-start < 9 {
						nsec = nsec*10 + int(b[i]-'0')
					}
					i++
				}
				n := i - start
				if n == 0 {
					return bad("expected digits after '.'")
				}
				if n > 9 {
					n = 9
				}
				for k := n; k < 9; k++ {
					nsec *= 10
				}
				prec = PrecFrac1 + Precision(n-1)
			}
		}
		if i >= len(b) {
			return Time{}, fmt.Errorf("%w: %q", ErrNoTimeZone, b)
		}
		switch b[i] {
		case 'Z':
			i++
		case '+', '-':
			oh, ok1 := num(i+1, 2)
			om, ok2 := num(i+4, 2)
			if !ok1 || !ok2 || b[i+3] != ':' || oh > 23 || om > 59 {
				return bad("expected zone designator ±hh:mm")
			}
			off := oh*3600 + om*60
			if b[i] == '-' {
				off = -off
			}
			if off != 0 {
				loc = time.FixedZone("", off)
			}
			i += 6
		default:
			return bad("expected zone designator Z or ±hh:mm")
		}
	}
	if i != len(b) {
		return bad("unexpected trailing characters")
	}
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) || hour > 23 || minute > 59 || sec > 60 {
		return bad("field out of range")
	}
	// A leap second (:60) is kept valid as the first instant of the next
	// minute (time.Date normalises it): a value that formats and parses
	// back to itself, which :59.999999999 at second precision would not.
	return Time{t: time.Date(year, time.Month(month), day, hour, minute, sec, nsec, loc), prec: prec}, nil
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// AppendFormat appends the W3C datetime form of t, at its precision and in
// its offset (Z for UTC), to b.
func (t Time) AppendFormat(b []byte) []byte {
	if t.prec == PrecNone {
		return b
	}
	tt := t.t
	b = append4(b, tt.Year())
	if t.prec >= PrecMonth {
		b = append(b, '-')
		b = append2(b, int(tt.Month()))
	}
	if t.prec >= PrecDay {
		b = append(b, '-')
		b = append2(b, tt.Day())
	}
	if t.prec < PrecMinute {
		return b
	}
	b = append(b, 'T')
	b = append2(b, tt.Hour())
	b = append(b, ':')
	b = append2(b, tt.Minute())
	if t.prec >= PrecSecond {
		b = append(b, ':')
		b = append2(b, tt.Second())
	}
	if t.prec >= PrecFrac1 {
		n := int(t.prec-PrecFrac1) + 1
		ns := tt.Nanosecond()
		var d [9]byte
		for k := 8; k >= 0; k-- {
			d[k] = byte('0' + ns%10)
			ns /= 10
		}
		b = append(b, '.')
		b = append(b, d[:n]...)
	}
	_, off := tt.Zone()
	if off == 0 {
		return append(b, 'Z')
	}
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	b = append(b, sign)
	b = append2(b, off/3600)
	b = append(b, ':')
	return append2(b, off%3600/60)
}

func append2(b []byte, v int) []byte { return append(b, byte('0'+v/10%10), byte('0'+v%10)) }
func append4(b []byte, v int) []byte {
	return append(b, byte('0'+v/1000%10), byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

// UTC returns t converted to UTC, with the same precision.
func (t Time) UTC() Time { return Time{t: t.t.UTC(), prec: t.prec} }
