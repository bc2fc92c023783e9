package source

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/source/simulate"
	"github.com/resourcesync-go/resourcesync/validate"
)

// served starts src on a loopback listener whose address is the Source's
// base URL; it returns the base URL.
func serveOn(t *testing.T, ln net.Listener, h http.Handler) {
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h}}
	srv.Start()
	t.Cleanup(srv.Close)
}

func listen(t *testing.T) (net.Listener, string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln, "http://" + ln.Addr().String() + "/"
}

// walk validates the whole tree from base and fails on any error or any
// document that could not be fetched.
func walk(t *testing.T, base string, minDocs int) *validate.WalkSummary {
	t.Helper()
	_, g := testnet.Client(t)
	// No whole-request deadline beyond validate's own per-request Timeout:
	// under -race on a loaded machine, reading a 50,000-entry part can take
	// longer than testnet's 30 s default.
	c := &http.Client{Transport: g.Transport()}
	var problems []string
	sum, err := validate.Walk(context.Background(), c, base, validate.Options{MaxDocs: 10000, Timeout: 5 * time.Minute}, func(p validate.Problem) {
		if p.Severity.String() == "error" || p.Rule == "RS-FETCH" {
			problems = append(problems, p.String())
		}
	})
	if err != nil {
		t.Fatalf("walk %s: %v", base, err)
	}
	if len(problems) > 0 || sum.Errors > 0 || sum.Skipped > 0 {
		t.Fatalf("walk %s: %d errors, %d skipped:\n%s", base, sum.Errors, sum.Skipped, strings.Join(problems[:min(len(problems), 20)], "\n"))
	}
	if sum.Documents < minDocs {
		t.Fatalf("walk %s: only %d documents", base, sum.Documents)
	}
	return sum
}

func write(t *testing.T, dir, rel, body string) {
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestServedAndPublishedValid changes a collection step by step (creates,
// updates, deletes, renames, names that need escaping) and, after each
// step, walks both the served Source and a published copy with the
// validator: zero errors, every linked document present.
func TestServedAndPublishedValid(t *testing.T) {
	dir := t.TempDir()
	ln, base := listen(t)
	src, err := Open(Config{BaseURL: base, Sets: []SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(),
		ChangeListPeriod: time.Hour, Dumps: true, Archives: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	serveOn(t, ln, src.Handler(nil))

	pubDir := t.TempDir()
	pln, pbase := listen(t)
	pub, err := Open(Config{BaseURL: pbase, Sets: []SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(), Out: pubDir,
		ChangeListPeriod: time.Hour, Dumps: true, Archives: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	serveOn(t, pln, http.FileServer(http.Dir(pubDir)))

	steps := []struct {
		name string
		do   func()
	}{
		{"empty", func() {}},
		{"one file", func() { write(t, dir, "a.txt", "alpha") }},
		{"creates", func() {
			for i := 0; i < 20; i++ {
				write(t, dir, fmt.Sprintf("d%d/f%d.html", i%3, i), strings.Repeat("x", i*100))
			}
			write(t, dir, "sp ace #1 100%?.txt", "escaped")
			write(t, dir, "caf\u00e9/\u00fcber.txt", "non-ASCII")
		}},
		{"updates", func() { write(t, dir, "a.txt", "alpha 2"); write(t, dir, "d0/f0.html", "changed") }},
		{"deletes", func() { os.Remove(filepath.Join(dir, "d1/f1.html")); os.RemoveAll(filepath.Join(dir, "d2")) }},
		{"renames", func() { os.Rename(filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")) }},
	}
	for _, step := range steps {
		step.do()
		time.Sleep(5 * time.Millisecond)
		for _, s := range []*Source{src, pub} {
			if _, err := s.Update(context.Background()); err != nil {
				t.Fatalf("%s: update: %v", step.name, err)
			}
		}
		walk(t, base, 4)
		walk(t, pbase, 4)
	}
	// The served resources are the directory's files at their escaped paths.
	c, _ := testnet.Client(t)
	resp, err := c.Get(base + "sp%20ace%20%231%20100%25%3F.txt")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("escaped resource: %v %v", resp, err)
	}
	resp.Body.Close()
}

// TestLargeCollectionValid publishes 120,000 files, enough for Resource
// List indexes, and validates the served Source.
func TestLargeCollectionValid(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 120,000 files (about 15 s); skipped with -short, run by the full test run")
	}
	dir := t.TempDir()
	for i := 0; i < 120000; i++ {
		p := filepath.Join(dir, fmt.Sprintf("%03d", i%500), fmt.Sprintf("%06d.txt", i))
		if i < 500 {
			os.MkdirAll(filepath.Dir(p), 0o755)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("resource %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln, base := listen(t)
	src, err := Open(Config{BaseURL: base, Sets: []SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(), Dumps: false})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	start := time.Now()
	rep, err := src.Update(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("scan + publish of 120,000 files: %v", time.Since(start))
	if p := rep.Publish.Sets[0].ResourceListParts; p < 3 {
		t.Fatalf("Resource List in %d parts, want an index of at least 3", p)
	}
	serveOn(t, ln, src.Handler(nil))
	sum := walk(t, base, 6)
	// The Resource List lists every file; the Change Lists none, since the
	// first scan is the baseline (split Change Lists are publish's
	// TestPublish120k, from a journal of 120,000 records).
	if sum.Entries < 120000 || sum.Entries >= 121000 {
		t.Errorf("walk saw %d entries, want the 120,000 of the Resource List and a few", sum.Entries)
	}
}

// TestSimulatedMinute runs the simulated collection for a minute of
// changes, with Change Lists closing every 10 seconds, and validates the
// Source during and after it.
func TestSimulatedMinute(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for a minute; skipped with -short, run by the full test run")
	}
	dir := t.TempDir()
	coll, err := simulate.New(dir, 300, 1)
	if err != nil {
		t.Fatal(err)
	}
	ln, base := listen(t)
	src, err := Open(Config{BaseURL: base, Sets: []SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(),
		ChangeListPeriod: 10 * time.Second, Dumps: true, Archives: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	serveOn(t, ln, src.Handler(nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	trigger := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, RunOptions{Trigger: trigger}) }()
	go coll.Run(ctx, 20, func([]simulate.Op) {
		select {
		case trigger <- struct{}{}:
		default:
		}
	})
	time.Sleep(30 * time.Second)
	walk(t, base, 6) // mid-run, while documents are being rewritten
	<-ctx.Done()
	<-done
	if _, err := src.Update(context.Background()); err != nil {
		t.Fatal(err)
	}
	rep, _ := src.Update(context.Background())
	if n := rep.Publish.Sets[0].ChangeLists; n < 5 {
		t.Errorf("%d Change Lists after a minute with a 10 s period", n)
	}
	walk(t, base, 10)
}
