package units

import (
	"strconv"
	"strings"
	"testing"
)

func TestBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {10188, "9.9 KiB"}, {10189, "10 KiB"},
		{1048000, "1023 KiB"}, {1048570, "1.0 MiB"}, {50 << 20, "50 MiB"}, {4_100_000, "3.9 MiB"},
		{1 << 30, "1.0 GiB"}, {1 << 40, "1.0 TiB"}, {1<<62 + 1<<61, "6.0 EiB"},
	} {
		if got := Bytes(tc.n); got != tc.want {
			t.Errorf("Bytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
	if got := Rate(1.5 * (1 << 20)); got != "1.5 MiB/s" {
		t.Errorf("Rate = %q", got)
	}
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		bad  bool
	}{
		{in: "0", want: 0}, {in: "1048576", want: 1 << 20}, {in: "-1", want: -1},
		{in: "256MiB", want: 256 << 20}, {in: "256 MiB", want: 256 << 20}, {in: "1.5GiB", want: 3 << 29},
		{in: "512kib", want: 512 << 10}, {in: "8M", want: 8 << 20}, {in: "1 KiB", want: 1024},
		{in: "100B", want: 100}, {in: "1.0 MiB", want: 1 << 20}, {in: "7EiB", want: 7 << 60},
		{in: "", bad: true}, {in: "MiB", bad: true}, {in: "10MB", bad: true}, {in: "10 kb", bad: true},
		{in: "10 XiB", bad: true}, {in: "8EiB", bad: true}, {in: "1e3", bad: true}, {in: "1..2KiB", bad: true},
	} {
		got, err := ParseBytes(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseBytes(%q) = %d, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	// What Bytes prints, ParseBytes reads back (to its precision).
	for _, n := range []int64{0, 999, 1024, 1536, 50 << 20, 1 << 30} {
		if got, err := ParseBytes(Bytes(n)); err != nil || got != n {
			t.Errorf("ParseBytes(Bytes(%d)) = %d, %v", n, got, err)
		}
	}
	if r, err := ParseRate("512KiB/s"); err != nil || r != 512<<10 {
		t.Errorf("ParseRate = %v, %v", r, err)
	}
}

func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"0", "256MiB", "1.5 GiB", "-1", "8EiB", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err != nil {
			return
		}
		if n >= 0 {
			if m, err := ParseBytes(strconv.FormatInt(n, 10)); err != nil || m != n {
				t.Fatalf("%q -> %d does not read back: %d, %v", s, n, m, err)
			}
		}
	})
}

// TestParseBytesBelowOne: a size or rate that is not zero but rounds to
// zero bytes ("--min-rate 0.4", "0.0001KiB") is refused, never read as 0
// (which the limits take as "no limit"); a written zero stays zero.
func TestParseBytesBelowOne(t *testing.T) {
	for _, s := range []string{"0.4", "0.0001KiB", "0.3/s", "-0.2"} {
		if n, err := ParseBytes(strings.TrimSuffix(s, "/s")); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", s, n)
		}
		if n, err := ParseRate(s); err == nil {
			t.Errorf("ParseRate(%q) = %v, want an error", s, n)
		}
	}
	for _, s := range []string{"0", "0.0", "0KiB", "0.0MiB", "0.6"} {
		if _, err := ParseBytes(s); err != nil {
			t.Errorf("ParseBytes(%q): %v", s, err)
		}
	}
}
