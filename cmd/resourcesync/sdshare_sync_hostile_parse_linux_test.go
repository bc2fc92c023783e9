package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
)

// Item 3 of issue 24: snapshots that make the RDF readers keep what they
// read (prefixes, nesting, namespace declarations) or that expand from a
// small gzip body. Each runs `sdshare sync` in a child process (the
// memory_linux_test.go harness: the child reports its VmHWM) under a
// context deadline, and must fail with its specific error, within
// hostileParsePeakMB of peak RSS, leaving the store empty. On main the
// three reader shapes kept every 15 MiB token (20 or 30 of them: peaks of
// 567, 583 and 515 MB) and the gzip body was loaded whole (1 GiB
// decoded from about 1 MB sent: 267,264 triples in 7 s). With the
// retained-bytes limit (64 MiB) the peaks are 120-180 MB, the gzip bomb's
// 42 MB.
const hostileParsePeakMB = 250

func TestSDShareSyncHostileParse(t *testing.T) {
	if testing.Short() {
		t.Skip("sends hundreds of MB of hostile snapshots to child processes")
	}
	const tokens = 20
	long := strings.Repeat("a", 15<<20) // a 15 MiB token: under the 16 MiB per-token limit
	bomb := gzipBombMember(t)
	rdfxmlHead := `<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:ex="http://x/"><rdf:Description rdf:about="http://x/a">`
	for _, tc := range []struct {
		name, ct string
		gzip     bool
		write    func(w io.Writer, i int) error // part i of the body
		parts    int
		want     string
	}{
		{"turtle prefixes", "text/turtle", false, func(w io.Writer, i int) error {
			_, err := fmt.Fprintf(w, "@prefix p%d: <http://x/%d/%s> .\n", i, i, long)
			return err
		}, tokens, "rdf: limit exceeded at line"},
		{"turtle nested [ ]", "text/turtle", false, func(w io.Writer, i int) error {
			if i == 0 {
				io.WriteString(w, "<http://x/a> ")
			}
			_, err := fmt.Fprintf(w, "<http://x/%d/%s> [ ", i, long)
			return err
		}, tokens, "open statements"},
		{"rdfxml nested xmlns", "application/rdf+xml", false, func(w io.Writer, i int) error {
			if i == 0 {
				io.WriteString(w, rdfxmlHead)
			}
			_, err := fmt.Fprintf(w, `<ex:p rdf:parseType="Resource" xmlns:a%d="http://x/%d/%s">`, i, i, long)
			return err
		}, 30, "open elements hold more than"},
		// 1,024 gzip members of 1 MiB each (about 1 KB sent for each):
		// 1 GiB of N-Triples from about 1 MB.
		{"gzip bomb", "application/n-triples", true, func(w io.Writer, i int) error {
			_, err := w.Write(bomb)
			return err
		}, 1024, "the gzip body expands more than 200-fold"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			m := newHostileSDShare(t)
			m.set("/snap", func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.ct)
				if tc.gzip {
					w.Header().Set("Content-Encoding", "gzip")
				}
				for i := range tc.parts {
					if tc.write(w, i) != nil {
						return // the client gave up
					}
				}
			})
			store := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			start := time.Now()
			code, out, peakKiB := memRunExit(ctx, t, "sdshare", "sync", "--store", store, "--graph", m.srv.URL+"/c=http://x/graph", m.srv.URL+"/")
			took := time.Since(start)
			if ctx.Err() != nil {
				t.Fatalf("still running at the test's deadline (%s)\n%s", took.Round(time.Second), out)
			}
			peakMB := float64(peakKiB) * 1024 / 1e6
			t.Logf("exit %d in %s, peak RSS %.1f MB", code, took.Round(100*time.Millisecond), peakMB)
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "failed:") {
					t.Log(l)
				}
			}
			if code != 1 || !strings.Contains(out, tc.want) {
				t.Errorf("exit %d, want 1 with %q\n%s", code, tc.want, out)
			}
			if peakMB > hostileParsePeakMB {
				t.Errorf("peak RSS %.1f MB, bound %d MB", peakMB, hostileParsePeakMB)
			}
			if m.count("/f") != 0 {
				t.Errorf("fragments read after a failed snapshot")
			}
			s, err := boltstore.OpenDir(store, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			n := 0
			for _, err := range s.Triples(context.Background(), "http://x/graph") {
				if err != nil {
					t.Fatal(err)
				}
				n++
			}
			if n != 0 {
				t.Errorf("the store holds %d triples of the refused snapshot", n)
			}
		})
	}
}

// gzipBombMember is one gzip member of 1 MiB of the same N-Triples line.
func gzipBombMember(t *testing.T) []byte {
	t.Helper()
	line := "<http://x/a> <http://x/p> \"" + strings.Repeat("b", 4000) + "\" .\n"
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	for n := 0; n < 1<<20; n += len(line) {
		zw.Write([]byte(line))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// --max-snapshot-bytes: a snapshot longer than the flag allows (its
// chunks together, as decoded) fails with the error naming the limit,
// permanently (asked for once), and the graph is left as it was.
func TestSDShareSyncMaxSnapshotBytes(t *testing.T) {
	s := memstore.New()
	defer s.Close()
	useTestStores(t, s)
	m := newHostileSDShare(t)
	m.set("/snap", ntDoc(strings.Repeat("<http://x/a> <http://x/p> \"0\" .\n", 100))) // 3,200 bytes
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code, out, errOut := runCLICtx(ctx, "sdshare", "sync", "--state", t.TempDir(), "--max-snapshot-bytes", "1000", "--graph", m.srv.URL+"/c=http://x/graph", m.srv.URL+"/")
	if code != 1 || !strings.Contains(errOut, "document too large: snapshot longer than 1000 bytes (decoded)") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if n := m.count("/snap"); n != 1 {
		t.Errorf("snapshot asked for %d times, want once", n)
	}
	for range s.Triples(context.Background(), "http://x/graph") {
		t.Fatal("the store holds triples of the refused snapshot")
	}
	code, out, errOut = runCLICtx(ctx, "sdshare", "sync", "--state", t.TempDir(), "--max-snapshot-bytes", "0", m.srv.URL+"/")
	if code != 2 || !strings.Contains(errOut, "--max-snapshot-bytes must be positive") {
		t.Errorf("--max-snapshot-bytes 0: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}

// A fragment is held whole, and a Turtle one of object lists holds a
// statement in 2 bytes ("1,"): a 4 MiB fragment is 2 million statements.
// It fails as too large once its statements would take 8 times
// the fragment limit (64 MiB) of memory, nothing applied, within
// hostileDensePeakMB of peak RSS in a child process. Before, it was
// parsed, scoped and applied whole: exit 0 at a peak of 1.8 GB (a 64 MiB
// one, the fragment limit, some 28 GB); now 340 MB.
const hostileDensePeakMB = 600

func TestSDShareSyncHostileDenseFragment(t *testing.T) {
	if testing.Short() {
		t.Skip("peak RSS of a child process")
	}
	m := newHostileSDShare(t)
	const ns = "http://www.sdshare.org/2012/core/"
	m.set("/f", atomDoc(atomFeed(`<entry><id>urn:a</id><title>a</title><updated>2020-06-02T00:00:00Z</updated><sdshare:resource xmlns:sdshare="`+ns+`">http://x/a</sdshare:resource><link rel="`+ns+`fragment" type="text/turtle" href="/frag/a"/></entry>`)))
	m.set("/frag/a", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/turtle")
		io.WriteString(w, "<http://x/a> <http://x/p> ")
		io.WriteString(w, strings.Repeat("1,", 2<<20))
		io.WriteString(w, "2 .\n")
	})
	store := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, out, peakKiB := memRunExit(ctx, t, "sdshare", "sync", "--store", store, "--graph", m.srv.URL+"/c=http://x/graph", m.srv.URL+"/")
	if ctx.Err() != nil {
		t.Fatalf("still running at the test's deadline\n%s", out)
	}
	peakMB := float64(peakKiB) * 1024 / 1e6
	t.Logf("exit %d, peak RSS %.1f MB", code, peakMB)
	if code != 1 || !strings.Contains(out, "document too large") || !strings.Contains(out, "statements") {
		t.Errorf("exit %d, want 1 with the fragment too large\n%s", code, out)
	}
	if peakMB > hostileDensePeakMB {
		t.Errorf("peak RSS %.1f MB, bound %d MB", peakMB, hostileDensePeakMB)
	}
	s, err := boltstore.OpenDir(store, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := hostileGraph(t, s, "http://x/graph"); got != "http://x/a 0" {
		t.Errorf("graph %v, want the snapshot only", got)
	}
}
