package main

import (
	"bufio"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// writeServeCollection writes a directory collection of about triples
// statements in big.nt (resources of 15 statements, one of them reaching
// a blank node) and one resource in small.nt.
func writeServeCollection(t *testing.T, dir string, triples int) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "big.nt"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for r := 0; r*15 < triples; r++ {
		fmt.Fprintf(w, "<http://ex/r%d> <http://www.w3.org/2000/01/rdf-schema#label> \"resource %d\" .\n", r, r)
		for p := range 12 {
			fmt.Fprintf(w, "<http://ex/r%d> <http://ex/p%d> \"value %d of resource %d, long enough to look like data\" .\n", r, p, p, r)
		}
		fmt.Fprintf(w, "<http://ex/r%d> <http://ex/address> _:a%d .\n_:a%d <http://ex/city> \"city %d\" .\n", r, r, r, r%100)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	writeSmall(t, dir, "1")
}

func writeSmall(t *testing.T, dir, v string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "small.nt"), []byte("<http://ex/small> <http://ex/v> \""+v+"\" .\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// serveMemoryPeak runs `sdshare serve` on a collection of about triples
// statements in a child process: it reads a fragment and the snapshot
// (its chunks too, when it has them), changes one file and waits for the
// change in the fragments feed, and returns the child's peak RSS (KiB).
func serveMemoryPeak(t *testing.T, triples int) int64 {
	t.Helper()
	data := t.TempDir()
	writeServeCollection(t, data, triples)
	addr := freeAddr(t)
	cmd := memCmd("sdshare", "serve", "--addr", addr, "--state", t.TempDir(), "--rescan", "100ms", "--debounce", "50ms", "c="+data)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errs := &syncBuffer{}
	cmd.Stderr = errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "serving SDShare at") {
				ready <- true
			}
		}
		io.Copy(io.Discard, out)
		done <- cmd.Wait()
	}()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	t.Cleanup(stop)
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("sdshare serve exited before serving: %v\n%s", err, errs.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("sdshare serve not serving after 2 minutes\n%s", errs.String())
	}
	hc, _ := testnet.Client(t)
	hc.Timeout = time.Minute
	base := "http://" + addr + "/c/"
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := hc.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	poll := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after 2 minutes\n%s", what, errs.String())
			}
		}
	}
	if code, body := get(base + "fragment?resource=" + url.QueryEscape("http://ex/r7")); code != 200 || !strings.Contains(body, "resource 7") || !strings.Contains(body, "city 7") {
		t.Fatalf("fragment: %d %.300s", code, body)
	}
	_, feed := get(base + "snapshots")
	m := regexp.MustCompile(`href="([^"?]*/snapshot/[0-9a-f-]+)[?"]`).FindStringSubmatch(feed)
	if m == nil {
		t.Fatalf("no snapshot in the snapshots feed:\n%s", feed)
	}
	var snap string
	poll("the snapshot", func() bool {
		code, body := get(m[1])
		snap = body
		return code == 200
	})
	if want := strings.Count(snap, "\n"); want < triples {
		t.Fatalf("snapshot of %d statements, want at least %d", want, triples)
	}
	if strings.Contains(feed, "/chunks") {
		_, chunks := get(m[1] + "/chunks")
		for _, c := range regexp.MustCompile(`href="([^"?]*/chunk/[0-9]+)[?"]`).FindAllStringSubmatch(chunks, -1) {
			if code, _ := get(c[1]); code != 200 {
				t.Fatalf("chunk %s: %d", c[1], code)
			}
		}
	}
	writeSmall(t, data, "2")
	poll("the change in the fragments feed", func() bool {
		_, f := get(base + "fragments")
		return strings.Contains(f, "http://ex/small")
	})
	if _, body := get(base + "fragment?resource=" + url.QueryEscape("http://ex/small")); !strings.Contains(body, `"2"`) {
		t.Fatalf("the changed fragment: %s", body)
	}
	kib, err := vmHWM(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	return kib
}

// TestSDShareServeMemoryFlat: `sdshare serve` of 25,000 and of 200,000
// triples (opened, a fragment and the snapshot read, one file changed
// and reloaded), each in a child process: the larger one's peak RSS is
// not more than the smaller's plus a bound far below the growth of a
// graph held in memory. Before, a collection's graph lived in memory
// (3.3 GiB peak at 1,000,000 triples, 611 MiB at 400,000); now it lives
// in a sorted file on disk, sorted in runs of a fixed size.
func TestSDShareServeMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("peak RSS: not with -short, the race run, whose instrumentation would make the figures meaningless")
	}
	small := serveMemoryPeak(t, 25000)
	large := serveMemoryPeak(t, 200000)
	t.Logf("peak RSS: %.1f MiB at 25,000 triples, %.1f MiB at 200,000", float64(small)/1024, float64(large)/1024)
	// The bound: the sort's runs and the Go heap's slack, whatever the
	// size; the graph of 175,000 more triples in memory took ~8 times it.
	const boundKiB = 32 << 10
	if large > small+boundKiB {
		t.Errorf("peak RSS grew with the collection: %.1f MiB at 200,000 triples, %.1f MiB at 25,000 (bound +%d MiB)",
			float64(large)/1024, float64(small)/1024, boundKiB>>10)
	}
}
