package push

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/graphstoretest"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
)

const graphIRI = "http://psi.test.no/graph"

func newReceiver(t *testing.T) (*Receiver, graphstore.Store, string) {
	t.Helper()
	s := memstore.New()
	t.Cleanup(func() { s.Close() })
	o, err := OpenOrder(filepath.Join(t.TempDir(), OrderFile), true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.Close() })
	rv := &Receiver{Store: s, Order: o, MaxBytes: 1 << 16}
	srv := httptest.NewServer(rv)
	t.Cleanup(srv.Close)
	return rv, s, srv.URL
}

func triples(t *testing.T, s graphstore.Store, g string) []rdf.Triple {
	t.Helper()
	var out []rdf.Triple
	for tr, err := range s.Triples(context.Background(), g) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tr)
	}
	return out
}

func post(t *testing.T, hc *http.Client, base, query, ctype string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/?"+query, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestReceiverBnodeClosure(t *testing.T) {
	rv, s, base := newReceiver(t)
	rv.AllowTextPlain = true // an old sender's type
	hc, _ := testnet.Client(t)
	b, err := os.ReadFile("../../testdata/sdshare/push/bnode-closure.nt")
	if err != nil {
		t.Fatal(err)
	}
	fixture := graphstoretest.NT(string(b))
	q := "resource=" + url.QueryEscape("http://psi.test.no/1") + "&graph=" + url.QueryEscape(graphIRI)
	steps := []struct {
		name, ctype, body string
		want              []rdf.Triple
	}{
		{"fixture as text/plain", "text/plain; charset=utf-8", string(b), fixture},
		{"again (idempotent)", "application/n-triples", string(b), fixture},
		{"empty body deletes", "application/n-triples", "", nil},
		{"fixture after the delete", "application/n-triples", string(b), fixture},
	}
	for _, st := range steps {
		code, msg := post(t, hc, base, q, st.ctype, nil, st.body)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", st.name, code, msg)
		}
		if got := triples(t, s, graphIRI); !rdf.Isomorphic(got, st.want) {
			t.Errorf("%s: graph %v, want %v", st.name, got, st.want)
		}
	}
}

func TestReceiverRequests(t *testing.T) {
	rv, s, base := newReceiver(t)
	hc, _ := testnet.Client(t)
	const a, b = "http://x/a", "http://x/b"
	const nt = "application/n-triples"
	one := func(r, v string) string { return fmt.Sprintf("<%s> <http://x/p> %q .\n", r, v) }
	q := func(rs ...string) string {
		v := url.Values{"resource": rs, "graph": {graphIRI}}
		return v.Encode()
	}
	for _, tc := range []struct {
		name  string
		query string
		ctype string
		hdr   map[string]string
		body  string
		code  int
		want  string // response body contains
	}{
		{"no resource", "graph=" + url.QueryEscape(graphIRI), nt, nil, one(a, "1"), 400, "no resource"},
		{"relative resource", q("a"), nt, nil, one(a, "1"), 400, "absolute"},
		{"no graph, no default", "resource=" + url.QueryEscape(a), nt, nil, one(a, "1"), 400, "no graph"},
		{"resource not a subject", q(b), nt, nil, one(a, "1"), 400, "not a subject"},
		{"unknown type", q(a), "application/json", nil, one(a, "1"), 415, "Content-Type"},
		{"no type", q(a), "", nil, one(a, "1"), 415, "Content-Type"},
		{"syntax error", q(a), nt, nil, "<http://x/a> <http://x/p> \"1 .\n", 400, "body"},
		{"too large", q(a), nt, nil, strings.Repeat(one(a, "1"), 3000), 413, "longer"},
		{"bad updated", q(a), nt, map[string]string{HeaderUpdated: "yesterday"}, one(a, "1"), 400, HeaderUpdated},
		{"bad sequence", q(a), nt, map[string]string{HeaderSequence: "-1"}, one(a, "1"), 400, HeaderSequence},
		{"batch with a stray statement", q(a, b), nt, nil, one(a, "1") + one(b, "2") + one("http://x/c", "3"), 400, "none of the resources"},
		{"batch", q(a, b), nt, nil, one(a, "1") + one(b, "2"), 200, "applied 2"},
		{"newer a", q(a), nt, map[string]string{HeaderUpdated: "2026-01-01T00:00:02Z"}, one(a, "new"), 200, "applied 1"},
		{"older a is stale", q(a), nt, map[string]string{HeaderUpdated: "2026-01-01T01:00:01+01:00"}, one(a, "old"), 200, "stale 1"},
		{"same a again", q(a), nt, map[string]string{HeaderUpdated: "2026-01-01T00:00:02Z"}, one(a, "new"), 200, "applied 1"},
		{"b by sequence", q(b), nt, map[string]string{HeaderSequence: "7"}, one(b, "seq7"), 200, "applied 1"},
		{"b older sequence", q(b), nt, map[string]string{HeaderSequence: "6"}, one(b, "seq6"), 200, "stale 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, msg := post(t, hc, base, tc.query, tc.ctype, tc.hdr, tc.body)
			if code != tc.code || !strings.Contains(msg, tc.want) {
				t.Errorf("%d %q, want %d containing %q", code, msg, tc.code, tc.want)
			}
		})
	}
	want := graphstoretest.NT(one(a, "new") + one(b, "seq7"))
	if got := triples(t, s, graphIRI); !rdf.Isomorphic(got, want) {
		t.Errorf("graph %v", got)
	}
	// The default graph.
	rv.DefaultGraph = "http://x/default"
	if code, msg := post(t, hc, base, "resource="+url.QueryEscape(a), "application/n-triples", nil, one(a, "d")); code != 200 {
		t.Errorf("default graph: %d %s", code, msg)
	}
	if got := triples(t, s, "http://x/default"); len(got) != 1 {
		t.Errorf("default graph %v", got)
	}
	for _, tc := range []struct {
		method, path string
		code         int
		want         string
	}{
		{http.MethodGet, "/ping", 200, "pong"},
		{http.MethodGet, "/", 200, "SDShare Push receiver"},
		{http.MethodPut, "/", 405, "POST"},
	} {
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: %d %q", tc.method, tc.path, resp.StatusCode, b)
		}
	}
}

func TestSplit(t *testing.T) {
	ts := graphstoretest.NT(`<http://x/a> <http://x/p> _:b1 .
_:b1 <http://x/q> _:b2 .
_:b2 <http://x/q> _:b1 .
_:b2 <http://x/r> <http://x/b> .
<http://x/b> <http://x/p> "b" .
`)
	parts, err := Split(ts, []string{"http://x/a", "http://x/b", "http://x/a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(parts["http://x/a"]) != 4 || len(parts["http://x/b"]) != 1 {
		t.Errorf("parts %v", parts)
	}
	if _, err := Split(ts, []string{"http://x/a"}); err == nil {
		t.Error("stray statement of b accepted")
	}
}

// faultProxy forwards POSTs to next and, for a share of them, fails the
// ways networks and proxies fail: 503 without forwarding, a connection
// reset after the receiver applied the request, a duplicate delivery, or a
// reordered one (delivered now, and a copy again much later, after newer
// fragments of the same resource).
type faultProxy struct {
	next  string
	hc    *http.Client
	share float64

	mu      sync.Mutex
	rng     *rand.Rand
	delayed []delayedReq
	n       int
	counts  map[string]int

	staleReplays atomic.Int64 // late copies the receiver refused as stale
}

type delayedReq struct {
	due    int
	query  string
	header http.Header
	body   []byte
}

func (p *faultProxy) fault() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	if p.rng.Float64() >= p.share {
		return ""
	}
	f := []string{"503", "reset", "duplicate", "reorder"}[p.rng.IntN(4)]
	p.counts[f]++
	return f
}

func (p *faultProxy) forward(query string, h http.Header, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodPost, p.next+"/?"+query, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	for _, k := range []string{"Content-Type", HeaderUpdated, HeaderSequence} {
		if v := h.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// due returns the delayed copies whose time has come (all when flush).
func (p *faultProxy) due(flush bool) []delayedReq {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out, keep []delayedReq
	for _, d := range p.delayed {
		if flush || d.due <= p.n {
			out = append(out, d)
		} else {
			keep = append(keep, d)
		}
	}
	p.delayed = keep
	return out
}

func (p *faultProxy) replay(flush bool) {
	for _, d := range p.due(flush) {
		if _, b, err := p.forward(d.query, d.header, d.body); err == nil && strings.Contains(string(b), "stale 1") {
			p.staleReplays.Add(1)
		}
	}
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	p.replay(false)
	f := p.fault()
	if f == "503" {
		http.Error(w, "injected", http.StatusServiceUnavailable)
		return
	}
	code, out, err := p.forward(r.URL.RawQuery, r.Header, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	switch f {
	case "duplicate":
		code, out, err = p.forward(r.URL.RawQuery, r.Header, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	case "reorder":
		p.mu.Lock()
		// Half the copies come back within 2,000 requests (often before
		// the resource's next version: applied again, equal instant),
		// half only at the end (after every newer version: stale unless
		// this was the last one). Delays alone would leave the stale
		// case to how the workers happen to be scheduled.
		due := p.n + 1 + p.rng.IntN(2000)
		if p.rng.IntN(2) == 0 {
			due = math.MaxInt
		}
		p.delayed = append(p.delayed, delayedReq{due: due, query: r.URL.RawQuery, header: r.Header.Clone(), body: body})
		p.mu.Unlock()
	case "reset":
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(http.ErrAbortHandler)
		}
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		conn.Close()
		return
	}
	w.WriteHeader(code)
	w.Write(out)
}

// fragmentFor returns version v of resource i: a few statements, often a
// nested blank-node tree, sometimes nothing (deleted).
func fragmentFor(rng *rand.Rand, i, v int) string {
	if rng.IntN(10) == 0 {
		return ""
	}
	r := fmt.Sprintf("<http://x/r%d>", i)
	var b strings.Builder
	fmt.Fprintf(&b, "%s <http://x/version> \"%d\" .\n", r, v)
	for k := range rng.IntN(3) {
		fmt.Fprintf(&b, "%s <http://x/p%d> <http://x/r%d> .\n", r, k, rng.IntN(1000))
	}
	if rng.IntN(2) == 0 {
		// Labels unique per resource, so that the expected graph (the
		// fragments parsed one by one and concatenated) keeps them apart.
		fmt.Fprintf(&b, "%s <http://x/note> _:n%d .\n_:n%d <http://x/text> \"v%d\"@en .\n", r, i, i, v)
		if rng.IntN(2) == 0 {
			fmt.Fprintf(&b, "_:n%d <http://x/by> _:m%d .\n_:m%d <http://x/name> \"m%d\" .\n_:m%d <http://x/back> _:n%d .\n", i, i, i, rng.IntN(50), i, i)
		}
	}
	return b.String()
}

// TestPushWithFaults: N fragments pushed through a proxy that injects 5%
// faults (503, resets after applying, duplicates, late re-deliveries of
// older fragments); the sender retries until 2xx. The receiver must end
// with exactly the newest fragment of every resource.
func TestPushWithFaults(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 1000
	}
	const versions = 5
	resources := n / versions
	_, s, recvURL := newReceiver(t)
	hc, _ := testnet.Client(t)
	proxy := &faultProxy{next: recvURL, hc: hc, share: 0.05, rng: rand.New(rand.NewPCG(10, 10)), counts: map[string]int{}}
	psrv := httptest.NewServer(proxy)
	defer psrv.Close()

	rng := rand.New(rand.NewPCG(1, 2))
	frags := make([][]string, resources)
	for i := range frags {
		for v := range versions {
			frags[i] = append(frags[i], fragmentFor(rng, i, v))
		}
	}
	t0 := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	var sent, retries, stale atomic.Int64
	const workers = 8
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for v := range versions {
				for i := w; i < resources; i += workers {
					q := url.Values{"resource": {fmt.Sprintf("http://x/r%d", i)}, "graph": {graphIRI}}.Encode()
					hdr := map[string]string{HeaderUpdated: t0.Add(time.Duration(v*resources+i) * time.Microsecond).Format(time.RFC3339Nano)}
					for attempt := 0; ; attempt++ {
						if attempt == 30 {
							t.Errorf("r%d v%d: gave up", i, v)
							return
						}
						req, _ := http.NewRequest(http.MethodPost, psrv.URL+"/?"+q, strings.NewReader(frags[i][v]))
						req.Header.Set("Content-Type", "application/n-triples")
						for k, val := range hdr {
							req.Header.Set(k, val)
						}
						resp, err := hc.Do(req)
						if err == nil {
							b, _ := io.ReadAll(resp.Body)
							resp.Body.Close()
							if resp.StatusCode/100 == 2 {
								if strings.Contains(string(b), "stale 1") {
									stale.Add(1)
								}
								break
							}
							if resp.StatusCode/100 == 4 {
								t.Errorf("r%d v%d: %d %s", i, v, resp.StatusCode, b)
								return
							}
						}
						retries.Add(1)
						time.Sleep(time.Millisecond)
					}
					sent.Add(1)
				}
			}
		})
	}
	wg.Wait()
	proxy.replay(true) // every late copy arrives after its newer versions
	if t.Failed() {
		return
	}
	var want []rdf.Triple
	for i := range frags {
		want = append(want, graphstoretest.NT(frags[i][versions-1])...)
	}
	got := triples(t, s, graphIRI)
	if !rdf.Isomorphic(got, want) {
		bad := 0
		for i := range frags {
			fr, _ := s.Fragment(context.Background(), graphIRI, rdf.IRI(fmt.Sprintf("http://x/r%d", i)))
			if w := graphstoretest.NT(frags[i][versions-1]); !rdf.Isomorphic(fr, w) {
				if bad++; bad < 4 {
					t.Errorf("r%d: %v, want %v", i, fr, w)
				}
			}
		}
		t.Fatalf("graph differs: %d triples, want %d; %d resources differ", len(got), len(want), bad)
	}
	t.Logf("%d fragments, %d triples at the end; faults %v; %d retries; %d stale acknowledged to the sender, %d late copies refused", sent.Load(), len(got), proxy.counts, retries.Load(), stale.Load(), proxy.staleReplays.Load())
	if proxy.staleReplays.Load() == 0 {
		t.Error("no late copy was refused as stale: the reordering was not exercised")
	}
	for _, f := range []string{"503", "reset", "duplicate", "reorder"} {
		if proxy.counts[f] == 0 {
			t.Errorf("no %s fault injected", f)
		}
	}
}

func FuzzReceiver(f *testing.F) {
	f.Add("resource=http%3A%2F%2Fx%2Fa", "application/n-triples", []byte("<http://x/a> <http://x/p> \"1\" .\n"))
	f.Add("resource=http%3A%2F%2Fx%2Fa&resource=http%3A%2F%2Fx%2Fb", "text/plain; charset=utf-8", []byte("<http://x/a> <http://x/p> _:b .\n_:b <http://x/p> _:b .\n<http://x/b> <http://x/p> \"2\" .\n"))
	f.Add("resource=%zz", "text/turtle", []byte("@prefix"))
	s := memstore.New()
	rv := &Receiver{Store: s, DefaultGraph: "http://x/g", MaxBytes: 1 << 12, AllowTextPlain: true}
	f.Fuzz(func(t *testing.T, query, ctype string, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		req.URL.RawQuery = query
		req.Header.Set("Content-Type", ctype)
		w := httptest.NewRecorder()
		rv.ServeHTTP(w, req)
		if w.Code != 200 && w.Code != 400 && w.Code != 413 && w.Code != 415 {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	})
}
