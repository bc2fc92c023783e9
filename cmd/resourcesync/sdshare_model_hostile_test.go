//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/client"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
)

// The hostile peer of TestSDShareModel (issue 24): a proxy in front of the
// real server, through which a client (client.Sync into a memstore of its
// own, kept across steps) reads. The proxy is honest (it only rewrites the
// server's URLs to its own) but for a hostile step, after a step's checks
// (one in eight, from an rng of its own, so that a seed's other steps stay
// what they were): for one resource of a collection it slips into the
// fragments feed
//   - foreign: an entry whose fragment also carries a statement about
//     another resource;
//   - future: an entry dated 9999-12-31 (its fragment the resource's own);
//   - next-elsewhere: a next link to another port;
//   - fragment-elsewhere: an entry whose fragment lies on another port;
//   - stall: an entry whose fragment's body stalls after its first bytes.
// The run must report the refusal (or the clamp), plant nothing (the
// store still equals the truth), request nothing of the other port, and
// keep t no further than now plus the skew; the next honest run is in step.

var sdmHostileKinds = []string{"foreign", "future", "next-elsewhere", "fragment-elsewhere", "stall"}

type sdmHostile struct {
	rng       *rand.Rand
	proxy     *httptest.Server
	other     *httptest.Server // another port: where off-origin links lead
	otherHits atomic.Int64
	store     *memstore.Store
	state     *client.State
	hc        *http.Client

	mu     sync.Mutex
	kind   string // "" honest
	col    string // the collection attacked (its name)
	entry  string // the entry slipped into its fragments feed
	frag   []byte // the fragment /hostile/frag serves
	served bool   // the attack reached the client
}

func (h *sdmHistory) hostileSetup() *sdmHostile {
	x := &sdmHostile{rng: rand.New(rand.NewPCG(h.seed, 0x4057113)), store: memstore.New(), hc: h.hc}
	var err error
	if x.state, err = client.OpenState(h.t.TempDir()); err != nil {
		h.fatalf("%v", err)
	}
	x.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		x.otherHits.Add(1)
		w.Header().Set("Content-Type", "application/n-triples")
		io.WriteString(w, "<http://hostile.example/s> <http://hostile.example/planted> \"elsewhere\" .\n")
	}))
	stalled := make(chan struct{})
	x.proxy = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { x.serve(h, w, r, stalled) }))
	h.t.Cleanup(func() { close(stalled); x.proxy.Close(); x.other.Close(); x.state.Close(); x.store.Close() })
	return x
}

// serve forwards r to the real server, its URLs rewritten to the proxy's,
// and slips the attack into the attacked collection's fragments feed.
func (x *sdmHostile) serve(h *sdmHistory, w http.ResponseWriter, r *http.Request, stalled chan struct{}) {
	x.mu.Lock()
	kind, col, entry, frag := x.kind, x.col, x.entry, x.frag
	x.mu.Unlock()
	switch r.URL.Path {
	case "/hostile/frag":
		w.Header().Set("Content-Type", "application/n-triples")
		w.Write(frag)
		return
	case "/hostile/stall":
		w.Header().Set("Content-Type", "application/n-triples")
		w.WriteHeader(http.StatusOK)
		w.Write(frag[:min(len(frag), 10)])
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-stalled:
		}
		return
	}
	req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, strings.TrimSuffix(h.base, "/")+r.URL.RequestURI(), nil)
	req.Header.Set("Accept", r.Header.Get("Accept"))
	resp, err := x.hc.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	if ct := resp.Header.Get("Content-Type"); strings.Contains(ct, "atom") {
		body = bytes.ReplaceAll(body, []byte(h.base), []byte(x.proxy.URL+"/"))
		// The last page of the attacked collection's fragments feed.
		if kind != "" && r.URL.Path == "/"+col+"/fragments" && !bytes.Contains(body, []byte(`rel="next"`)) {
			body = bytes.Replace(body, []byte("</feed>"), []byte(entry+"</feed>"), 1)
			x.mu.Lock()
			x.served = true
			x.mu.Unlock()
		}
	}
	for _, k := range []string{"Content-Type", "Retry-After", "Location"} {
		if v := resp.Header.Get(k); v != "" {
			w.Header().Set(k, strings.ReplaceAll(v, h.base, x.proxy.URL+"/"))
		}
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}

// sync runs the proxy's client with retries further attempts (-1: none,
// in the attack's run, where a stall then costs one StallTimeout).
func (x *sdmHostile) sync(h *sdmHistory, retries int) (*client.Report, error) {
	return client.Sync(context.Background(), client.Config{Overview: x.proxy.URL + "/", Store: x.store, State: x.state, HTTPClient: x.hc,
		MaxWait: time.Minute, StallTimeout: time.Second, Retry: client.RetryPolicy{Retries: retries, BaseDelay: 10 * time.Millisecond, MaxDelay: 20 * time.Millisecond},
		// The truth's graphs are named by the real server's URLs.
		Graph: func(c client.Collection) string { return strings.Replace(c.CollectionFeed, x.proxy.URL+"/", h.base, 1) }})
}

func sdmXMLText(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// hostileStep runs the hostile peer after one step in eight.
func (h *sdmHistory) hostileStep() {
	h.t.Helper()
	if h.hostile == nil {
		h.hostile = h.hostileSetup()
	}
	x := h.hostile
	if x.rng.IntN(8) != 0 {
		return
	}
	// In step through the honest proxy first.
	if rep, err := x.sync(h, 1); err != nil || !rep.OK() {
		h.fatalf("client.Sync through the honest proxy: %v %+v", err, rep)
	}
	var cols []*sdmCol
	for _, c := range h.cols {
		if len(c.res) > 0 {
			cols = append(cols, c)
		}
	}
	if len(cols) == 0 {
		return
	}
	c := cols[x.rng.IntN(len(cols))]
	iris := c.iris()
	res := iris[x.rng.IntN(len(iris))]
	kind := sdmHostileKinds[x.rng.IntN(len(sdmHostileKinds))]
	foreign := "http://hostile.example/s"
	if len(iris) > 1 {
		foreign = iris[(x.rng.IntN(len(iris)-1)+1+slices.Index(iris, res))%len(iris)]
	}
	own := h.render("x.nt", c.res[res].ts)
	updated, href := time.Now().UTC().Format(time.RFC3339Nano), x.proxy.URL+"/hostile/frag"
	frag, next := own, ""
	switch kind {
	case "foreign":
		frag = append(append([]byte(nil), own...), h.render("x.nt", []rdf.Triple{{S: rdf.IRI(foreign), P: rdf.IRI("http://hostile.example/planted"), O: rdf.Literal("planted")}})...)
	case "future":
		updated = "9999-12-31T00:00:00Z"
	case "next-elsewhere":
		next = `<link rel="next" href="` + x.other.URL + `/f"/>`
	case "fragment-elsewhere":
		href = x.other.URL + "/frag"
	case "stall":
		href = x.proxy.URL + "/hostile/stall"
	}
	entry := next
	if next == "" {
		entry = fmt.Sprintf(`<entry><id>urn:hostile:%d</id><title>hostile</title><updated>%s</updated><resource xmlns="http://www.sdshare.org/2012/core/">%s</resource><link rel="http://www.sdshare.org/2012/core/fragment" type="application/n-triples" href="%s"/></entry>`,
			x.rng.Uint64(), updated, sdmXMLText(res), href)
	}
	h.logf("  hostile peer: %s, for %s of %s", kind, res, c.name)
	h.stats["hostile "+kind]++
	x.mu.Lock()
	x.kind, x.col, x.entry, x.frag, x.served = kind, c.name, entry, frag, false
	x.mu.Unlock()
	x.otherHits.Store(0)
	rep, err := x.sync(h, -1)
	x.mu.Lock()
	served := x.served
	x.kind = ""
	x.mu.Unlock()
	if err != nil || rep == nil {
		h.fatalf("hostile %s: client.Sync: %v", kind, err)
	}
	if !served {
		h.fatalf("hostile %s: test bug: the attack never reached the client: %+v", kind, rep)
	}
	var said []string
	future := 0
	for _, cr := range rep.Collections {
		future += cr.FutureUpdated
		if cr.Err != "" {
			said = append(said, cr.Err)
		}
		for _, f := range cr.Failures {
			said = append(said, f.Err)
		}
	}
	all := strings.Join(said, "; ")
	want := map[string]string{
		"foreign":            "statement with subject " + foreign + " belongs to none of the resources (" + res + ")",
		"next-elsewhere":     "location " + x.other.URL + "/f leaves the Source's authority",
		"fragment-elsewhere": "location " + x.other.URL + "/frag leaves the Source's authority",
		"stall":              "response stalled",
	}[kind]
	switch {
	case kind == "future" && (future == 0 || !rep.OK()):
		h.fatalf("hostile future: the run did not report the clamp, or failed: %d clamped, %q", future, all)
	case kind != "future" && !strings.Contains(all, want):
		h.fatalf("hostile %s: the run did not report %q: %q", kind, want, all)
	}
	if n := x.otherHits.Load(); n != 0 {
		h.fatalf("hostile %s: %d requests to the other port", kind, n)
	}
	// Nothing planted: the store is the truth.
	for _, c := range h.cols {
		if d := h.compare("client.Sync through the hostile proxy ("+kind+")", x.store, c); d != "" {
			h.fatalf("%s", d)
		}
	}
	st, err := x.state.All()
	if err != nil {
		h.fatalf("%v", err)
	}
	for k, cs := range st {
		if cs.T.After(time.Now().Add(client.DefaultMaxSkew)) {
			h.fatalf("hostile %s: t of %s moved to %s", kind, k, cs.T)
		}
	}
	h.checkT("client.Sync through the proxy", st)
	if kind == "future" {
		h.logf("  hostile peer: applied, its date clamped (%d entries)", future)
	} else {
		h.logf("  hostile peer: refused (%.200s)", all)
	}
	// Honest again: in step.
	if rep, err := x.sync(h, 1); err != nil || !rep.OK() {
		h.fatalf("client.Sync through the honest proxy after a hostile %s: %v %+v", kind, err, rep)
	}
	for _, c := range h.cols {
		if d := h.compare("client.Sync through the honest proxy", x.store, c); d != "" {
			h.fatalf("%s", d)
		}
	}
}
