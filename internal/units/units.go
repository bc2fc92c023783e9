package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

var iec = [...]string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}

// Bytes formats n with IEC units: "999 B", "1.5 KiB", "50 MiB". One
// decimal below 10 of a unit, none above: three significant figures at
// most, so a figure keeps its width as it grows.
func Bytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v := float64(n)
	i := -1
	for v >= 1024 && i < len(iec)-1 {
		v /= 1024
		i++
	}
	// Round first: 1023.96 KiB is "1.0 MiB", not "1024 KiB".
	if v >= 1023.5 && i < len(iec)-1 {
		v /= 1024
		i++
	}
	if v < 9.95 {
		return strconv.FormatFloat(v, 'f', 1, 64) + " " + iec[i]
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " " + iec[i]
}

// Rate formats a rate in bytes per second: "1.5 MiB/s".
func Rate(bytesPerSec float64) string {
	if bytesPerSec < 0 {
		bytesPerSec = 0
	}
	return Bytes(int64(bytesPerSec+0.5)) + "/s"
}

// ParseBytes reads a size as people write it and as Bytes prints it: plain
// bytes ("1048576", "-1" where a flag gives negative numbers a meaning) or a
// number with an IEC unit ("256MiB", "1.5 GiB", "512kib"). rclone's single
// letters (K, M, G, T, P, E) are taken as the same binary units, since a
// user who types them mostly means that; decimal units (KB, MB) are refused
// rather than guessed, because 1 MB is 1000000 bytes to some and 1048576 to
// others.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] == '-' || t[i] == '+' || t[i] == '.' || (t[i] >= '0' && t[i] <= '9')) {
		i++
	}
	num, unit := t[:i], strings.TrimSpace(t[i:])
	if num == "" {
		return 0, fmt.Errorf("%q: not a size: give bytes or a number with KiB, MiB, GiB or TiB", s)
	}
	mult, ok := unitMultiplier(unit)
	if !ok {
		return 0, fmt.Errorf("%q: unknown unit %q: use B, KiB, MiB, GiB, TiB, PiB or EiB (powers of 1024)", s, unit)
	}
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		if mult == 1 {
			return n, nil
		}
		if n > math.MaxInt64/mult || n < math.MinInt64/mult {
			return 0, fmt.Errorf("%q: too large", s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q: not a size: give bytes or a number with KiB, MiB, GiB or TiB", s)
	}
	v := math.Round(f * float64(mult))
	if v >= math.MaxInt64 || v <= math.MinInt64 {
		return 0, fmt.Errorf("%q: too large", s)
	}
	if v == 0 && f != 0 {
		// "0.4" or "0.0001KiB" would round to 0, which a limit reads as
		// "none": refuse it rather than lift the limit silently.
		return 0, fmt.Errorf("%q: less than one byte: give at least 1 (or 0)", s)
	}
	return int64(v), nil
}

// ParseRate reads a rate in bytes per second: a size as ParseBytes takes
// it, with an optional "/s" ("512KiB", "1.5 MiB/s").
func ParseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimSuffix(strings.TrimSuffix(t, "/s"), "/S")
	n, err := ParseBytes(t)
	if err != nil {
		return 0, err
	}
	return float64(n), nil
}

// unitMultiplier returns the bytes in one unit, case-insensitively.
func unitMultiplier(unit string) (int64, bool) {
	u := strings.ToLower(unit)
	if u == "" || u == "b" {
		return 1, true
	}
	if strings.HasSuffix(u, "ib") {
		u = strings.TrimSuffix(u, "ib")
	} else if len(u) != 1 {
		return 0, false // "KB", "MB": decimal or binary, nobody agrees
	}
	switch u {
	case "k":
		return 1 << 10, true
	case "m":
		return 1 << 20, true
	case "g":
		return 1 << 30, true
	case "t":
		return 1 << 40, true
	case "p":
		return 1 << 50, true
	case "e":
		return 1 << 60, true
	}
	return 0, false
}
