package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Peak memory of `sdshare sync` against hostile servers (issue 24, items
// 1, 2 and 7), each run in a child process (memRunExit) whose VmHWM is
// its own. The bounds are far below what main needed and far above the
// client's own need (20-40 MB for the test binary as the command),
// so that GC pacing does not make them flaky.

const hostileMemBoundMB = 100

func hostileMem(t *testing.T, timeout time.Duration, args ...string) (int, string, float64) {
	t.Helper()
	if testing.Short() {
		t.Skip("peak memory in a child process: not with -short (the race run)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	code, out, kib := memRunExit(ctx, t, append([]string{"sdshare", "sync", "--store", t.TempDir(), "--state", t.TempDir()}, args...)...)
	mb := float64(kib) * 1024 / 1e6
	t.Logf("peak RSS %.1f MB (bound %d MB), exit %d", mb, hostileMemBoundMB, code)
	if ctx.Err() != nil {
		t.Fatalf("killed at the test's deadline (%s)\n%.3000s", timeout, out)
	}
	if mb > hostileMemBoundMB {
		t.Errorf("peak RSS %.1f MB, more than %d MB", mb, hostileMemBoundMB)
	}
	return code, out, mb
}

// Item 2: a fragments feed of 100 pages, each naming the next with a
// 1 MiB URL fragment (distinct pages). On main the loop detection kept
// every URL: 1.09 GB after 150 pages of 4 MiB URLs, 778 MB after 100
// (79 MB with the fix); here about 200 MB on main, 40 MB with the fix.
func TestSDShareSyncHostileMemoryNextLinks(t *testing.T) {
	t.Parallel()
	const ns = "http://www.sdshare.org/2012/core/"
	const pages = 100
	huge := strings.Repeat("x", 1<<20)
	m := newHostileSDShare(t)
	var served atomic.Int64
	m.set("/f", func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		p, _ := strconv.Atoi(r.URL.Query().Get("p"))
		next, entry := "", ""
		if p < pages {
			next = fmt.Sprintf("/f?p=%d#%s", p+1, huge)
		}
		if p == 0 {
			entry = atomEntry("2020-06-02T00:00:00Z", "http://x/a", ns+"fragment", "/frag/a")
		}
		atomDoc(atomFeedNext(entry, next))(w, r)
	})
	code, out, _ := hostileMem(t, 2*time.Minute, m.srv.URL+"/")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("on %d pages", pages+1)) {
		t.Errorf("exit %d, want 0 after %d pages (%d served)\n%.3000s", code, pages+1, served.Load(), out)
	}
}

// Item 1: a fragment whose body stalls fails after --timeout, in bounded
// memory (on main: a hang, killed at the deadline).
func TestSDShareSyncHostileMemoryStall(t *testing.T) {
	t.Parallel()
	m := newHostileSDShare(t)
	m.set("/frag/a", stall(t, "application/n-triples", "<http://x/a> "))
	code, out, _ := hostileMem(t, 40*time.Second, "--timeout", "1s", "--min-rate", "0", m.srv.URL+"/")
	if code != 1 || !strings.Contains(out, "response stalled: no bytes for 1s") {
		t.Errorf("exit %d, want 1 with \"response stalled\"\n%.3000s", code, out)
	}
}

// Item 7: a fragment link to another port, where 48 MB of statements
// wait, is refused without a request there (on main: fetched, parsed and
// applied).
func TestSDShareSyncHostileMemoryOffOrigin(t *testing.T) {
	t.Parallel()
	const ns = "http://www.sdshare.org/2012/core/"
	var big strings.Builder
	for i := 0; big.Len() < 48<<20; i++ {
		fmt.Fprintf(&big, "<http://x/a> <http://x/p%d> \"%0100d\" .\n", i, i)
	}
	body := big.String()
	var hits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/n-triples")
		w.Write([]byte(body))
	}))
	defer other.Close()
	m := newHostileSDShare(t)
	m.set("/f", atomDoc(atomFeed(atomEntry("2020-06-02T00:00:00Z", "http://x/a", ns+"fragment", other.URL+"/frag/a"))))
	code, out, _ := hostileMem(t, time.Minute, m.srv.URL+"/")
	if code != 1 || !strings.Contains(out, "location "+other.URL+"/frag/a leaves the Source's authority") || hits.Load() != 0 {
		t.Errorf("exit %d, %d requests to the other host, want 1 and none\n%.3000s", code, hits.Load(), out)
	}
}
