package httpclient

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestParseBWLimit(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 11, 29, h, m, 0, 0, time.Local) }
	for _, tc := range []struct {
		in   string
		bad  bool
		at   time.Time
		want float64
		str  string
	}{
		{in: "256KiB", at: at(12, 0), want: 256 << 10, str: "256KiB"},
		{in: "1.5MiB/s", at: at(0, 0), want: 3 << 19, str: "1.5MiB"},
		{in: "1048576", at: at(0, 0), want: 1 << 20, str: "1.0MiB"},
		{in: "off", at: at(12, 0), want: 0, str: "off"},
		{in: "08:00,512KiB 19:00,off", at: at(7, 59), want: 0, str: "08:00,512KiB 19:00,off"},
		{in: "08:00,512KiB 19:00,off", at: at(8, 0), want: 512 << 10},
		{in: "08:00,512KiB 19:00,off", at: at(18, 59), want: 512 << 10},
		{in: "08:00,512KiB 19:00,off", at: at(19, 0), want: 0},
		{in: "19:00,1MiB 08:00,512KiB", at: at(3, 0), want: 1 << 20}, // yesterday's last entry lasts past midnight
		{in: "", bad: true}, {in: "fast", bad: true}, {in: "10MB", bad: true}, {in: "-1KiB", bad: true},
		{in: "8:00,1MiB", bad: true}, {in: "24:00,1MiB", bad: true}, {in: "08:00", bad: true},
		{in: "08:00,1MiB 08:00,off", bad: true}, {in: "08:00,1MiB 512KiB", bad: true},
	} {
		b, err := ParseBWLimit(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseBWLimit(%q) = %v, want an error", tc.in, b)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseBWLimit(%q): %v", tc.in, err)
			continue
		}
		if got := b.At(tc.at); got != tc.want {
			t.Errorf("ParseBWLimit(%q).At(%s) = %v, want %v", tc.in, tc.at.Format("15:04"), got, tc.want)
		}
		if tc.str != "" && b.String() != tc.str {
			t.Errorf("ParseBWLimit(%q).String() = %q, want %q", tc.in, b.String(), tc.str)
		}
	}
}

func FuzzParseBWLimit(f *testing.F) {
	for _, s := range []string{"256KiB", "off", "08:00,512KiB 19:00,off", "23:59,1 00:00,2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBWLimit(s)
		if err != nil {
			return
		}
		if r := b.At(time.Now()); r < 0 {
			t.Fatalf("%q: negative rate %v", s, r)
		}
		if _, err := ParseBWLimit(b.String()); err != nil {
			t.Fatalf("%q prints as %q, which does not parse: %v", s, b.String(), err)
		}
	})
}

// TestBWLimitPacesBodies: 1 MiB read through a client made with
// --bwlimit 256KiB takes at least about 3 s (4 s less the first burst);
// without it, no time to speak of.
func TestBWLimitPacesBodies(t *testing.T) {
	body := bytes.Repeat([]byte("x"), 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(body) }))
	defer srv.Close()
	fetch := func(bw *Bandwidth) time.Duration {
		a, err := New(Options{Bandwidth: bw})
		if err != nil {
			t.Fatal(err)
		}
		c, err := a.Client(&http.Client{})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != int64(len(body)) {
			t.Fatalf("read %d bytes, %v", n, err)
		}
		return time.Since(start)
	}
	lim, _ := ParseBWLimit("256KiB")
	if d := fetch(NewBandwidth(lim)); d < 3*time.Second {
		t.Errorf("1 MiB at 256KiB/s took %v, want at least 3s", d)
	}
	off, _ := ParseBWLimit("off")
	if NewBandwidth(off) != nil {
		t.Error("--bwlimit off made a limiter")
	}
	if d := fetch(nil); d > 3*time.Second {
		t.Logf("unlimited: %v (a slow machine?)", d)
	}
}
