package units

import "strconv"

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
