package rs

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// peakRSS returns the process's peak resident set size in bytes (Linux).
func peakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/self/status")
}

// TestStreamMillionRSS runs the decoding of 1,000,000 entries in a fresh
// process and checks its peak RSS: the bound is 64 MB.
func TestStreamMillionRSS(t *testing.T) {
	if os.Getenv("RS_RSS_CHILD") == "1" {
		n := decodeAll(t, newGenReader(1000000))
		rss, err := peakRSS()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("entries=%d peak_rss=%d\n", n, rss)
		return
	}
	if testing.Short() {
		t.Skip("streams 1,000,000 entries in a child process; skipped with -short")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStreamMillionRSS$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RS_RSS_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var n int
	var rss int64
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "entries=") {
			fmt.Sscanf(line, "entries=%d peak_rss=%d", &n, &rss)
		}
	}
	if n != 1000000 || rss == 0 {
		t.Fatalf("child output: %s", out)
	}
	t.Logf("1,000,000 entries decoded with peak RSS %.1f MiB", float64(rss)/(1<<20))
	if rss > 64<<20 {
		t.Errorf("peak RSS %d MiB exceeds 64 MiB", rss>>20)
	}
}

type decoded struct {
	Head    Head
	Entries []Entry
	Diags   []Diagnostic
	Err     string
}

func decodeFull(r io.Reader) decoded {
	var out decoded
	d := NewDecoder(r)
	h, err := d.Head()
	if err != nil {
		out.Err = err.Error()
		return out
	}
	for e, err := range d.All() {
		if err != nil {
			out.Err = err.Error()
			break
		}
		out.Entries = append(out.Entries, *e)
	}
	out.Head = *h
	out.Diags = d.TakeDiagnostics()
	return out
}

// TestReadBoundaries decodes every example through readers that return one
// byte at a time or data with the final error, and checks the result does
// not depend on where reads split the input.
func TestReadBoundaries(t *testing.T) {
	for _, p := range exampleFiles(t) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want := decodeFull(bytes.NewReader(b))
		for name, r := range map[string]io.Reader{
			"one byte": iotest.OneByteReader(bytes.NewReader(b)),
			"half":     iotest.HalfReader(bytes.NewReader(b)),
			"data+EOF": iotest.DataErrReader(bytes.NewReader(b)),
		} {
			got := decodeFull(r)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s via %s reader:\n got %+v\nwant %+v", p, name, got, want)
			}
		}
	}
}
