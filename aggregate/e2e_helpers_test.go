package aggregate_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/notify"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/websub/hub"
)

// quiet is the logger of the test's Sources and hubs: their warnings
// (a subscriber gone at the end, ...) are not the test's output.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// e2eSource is one in-process Source (package source) served on
// loopback, with an embedded hub when it is followed.
type e2eSource struct {
	name string // its DEST under the aggregator's root, and its ID
	dir  string // what it publishes
	base string
	src  *source.Source
	// opts are the line's options in the sources file.
	opts   string
	follow bool
	hot    bool // changed every round
	n      int  // files written so far (names of new files)
}

// startE2ESource publishes files random files (seeded by rng) from a new
// directory at a new loopback server; withHub embeds a hub that delivers
// to loopback callbacks.
func startE2ESource(t *testing.T, ctx context.Context, rng *rand.Rand, name string, files int, withHub bool) *e2eSource {
	t.Helper()
	s := &e2eSource{name: name, dir: t.TempDir(), follow: withHub}
	for range files {
		s.write(t, rng)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.base = "http://" + ln.Addr().String() + "/"
	// AllowEmpty: one Source is emptied on purpose; the aggregator's
	// --max-delete must be what protects its mirror.
	stateDir := t.TempDir()
	cfg := source.Config{BaseURL: s.base, Sets: []source.SetConfig{{Name: "default", Dir: s.dir}}, StateDir: stateDir,
		ChangeListPeriod: time.Hour, AllowEmpty: true, Logger: quiet,
		// The Sources' own state without fsync: the test is about the
		// aggregator's side, and 54 Sources share two cores.
		OpenStore: func(_ context.Context, set string) (store.Store, error) {
			return bolt.OpenSet(stateDir, set, &bolt.Options{NoSync: true})
		}}
	var svc *notify.Service
	if withHub {
		svc, err = notify.Setup(&cfg, notify.ServiceConfig{AllowPrivateCallbacks: true, RetryInterval: 100 * time.Millisecond,
			Hub: func(c *hub.Config) { c.NoSync = true }})
		if err != nil {
			t.Fatal(err)
		}
	}
	src, err := source.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.src = src
	t.Cleanup(func() { src.Close() })
	var extra map[string]http.Handler
	if svc != nil {
		t.Cleanup(func() { svc.Close() })
		if err := svc.Bind(ctx, src); err != nil {
			t.Fatal(err)
		}
		extra = svc.Handlers()
	}
	if _, err := src.Update(ctx); err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: src.Handler(extra)}}
	srv.Start()
	t.Cleanup(srv.Close)
	if svc != nil {
		svc.Run(ctx, src)
	}
	return s
}

// write adds a new file (some in subdirectories).
func (s *e2eSource) write(t *testing.T, rng *rand.Rand) {
	t.Helper()
	s.n++
	p := fmt.Sprintf("f%03d.txt", s.n)
	if s.n%3 == 0 {
		p = fmt.Sprintf("d%d/sub/f%03d.bin", s.n%4, s.n)
	}
	s.put(t, p, randBytes(rng, 16+rng.IntN(2000)))
}

func (s *e2eSource) put(t *testing.T, rel string, b []byte) {
	t.Helper()
	p := filepath.Join(s.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.IntN(256))
	}
	return b
}

// change updates one file, adds one and, every other time, deletes one,
// then publishes (notifying the hub of a followed Source).
func (s *e2eSource) change(t *testing.T, ctx context.Context, rng *rand.Rand) {
	t.Helper()
	paths := sortedKeys(tree(t, s.dir, false))
	if len(paths) > 0 {
		s.put(t, paths[rng.IntN(len(paths))], randBytes(rng, 16+rng.IntN(2000)))
	}
	s.write(t, rng)
	if s.n%2 == 0 && len(paths) > 3 {
		if err := os.Remove(filepath.Join(s.dir, filepath.FromSlash(paths[rng.IntN(len(paths))]))); err != nil {
			t.Fatal(err)
		}
	}
	s.update(t, ctx)
}

func (s *e2eSource) update(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := s.src.Update(ctx); err != nil {
		t.Fatalf("%s: update: %v", s.name, err)
	}
}

// tree reads every file under dir (without the mirror's state directory
// when mirror), by slash path.
func tree(t *testing.T, dir string, mirror bool) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			// The aggregator writes the mirror meanwhile: a file
			// (a temporary one, say) may be gone by now.
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if mirror && rel == ".resourcesync" {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if os.IsNotExist(err) {
			return nil
		} else if err != nil {
			return err
		}
		m[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// treeDiff describes how got differs from want ("" when equal).
func treeDiff(want, got map[string][]byte) string {
	var d []string
	for _, p := range sortedKeys(want) {
		g, ok := got[p]
		switch {
		case !ok:
			d = append(d, "missing "+p)
		case !bytes.Equal(g, want[p]):
			d = append(d, "differs "+p)
		}
	}
	for _, p := range sortedKeys(got) {
		if _, ok := want[p]; !ok {
			d = append(d, "extra "+p)
		}
	}
	if len(d) > 5 {
		d = append(d[:5], fmt.Sprintf("... %d in all", len(d)))
	}
	return strings.Join(d, ", ")
}

func sortedInts[V any](m map[int]V) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// stallServer accepts connections and never answers; closing it (at the
// end of the test) drops them.
func stallServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/"
}

// closedURL is a loopback address nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + ln.Addr().String() + "/"
	ln.Close()
	return u
}

// offOriginSource is the hostile Source of destination's
// TestDocumentOffOrigin: its Capability List names a Resource List on
// another authority, which a Destination must never request. It returns
// the Source's URL and the number of requests the other authority got.
func offOriginSource(t *testing.T) (string, func() int) {
	t.Helper()
	var (
		mu   sync.Mutex
		hits int
	)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>
</urlset>`)
	}))
	t.Cleanup(other.Close)
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/capabilitylist.xml" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="capabilitylist"/>
  <url><loc>`+other.URL+`/resourcelist.xml</loc><rs:md capability="resourcelist"/></url>
</urlset>`)
	}))
	t.Cleanup(src.Close)
	return src.URL + "/capabilitylist.xml", func() int {
		mu.Lock()
		defer mu.Unlock()
		return hits
	}
}

// runLog counts, from the aggregator's events, the runs of each Source
// and the most that were running at once, per Source and over those that
// take a worker slot (notifications skip the queue).
type runLog struct {
	mu            sync.Mutex
	slottedRun    map[int64]bool // running, by run ID: whether it holds a slot
	running       map[string]int
	maxPerSource  map[string]int
	slotted       int
	maxSlotted    int
	notifications map[string]int // notification runs that succeeded
}

func newRunLog() *runLog {
	return &runLog{slottedRun: map[int64]bool{}, running: map[string]int{}, maxPerSource: map[string]int{}, notifications: map[string]int{}}
}

func (l *runLog) event(e aggregate.Event) {
	if e.Run == nil || (e.Kind != aggregate.EventRunStart && e.Kind != aggregate.EventRunEnd) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.Kind == aggregate.EventRunStart {
		// run-start's Mode is the kind of run; run-end's says what the
		// run did.
		slotted := e.Run.Mode != "notification"
		l.slottedRun[e.Run.ID] = slotted
		l.running[e.Source]++
		l.maxPerSource[e.Source] = max(l.maxPerSource[e.Source], l.running[e.Source])
		if slotted {
			l.slotted++
			l.maxSlotted = max(l.maxSlotted, l.slotted)
		}
		return
	}
	slotted, ok := l.slottedRun[e.Run.ID]
	if !ok {
		return
	}
	delete(l.slottedRun, e.Run.ID)
	l.running[e.Source]--
	if slotted {
		l.slotted--
	} else if e.Status == "ok" {
		l.notifications[e.Source]++
	}
}

// removeFile removes the file at slash path rel under dir.
func removeFile(dir, rel string) error {
	return os.Remove(filepath.Join(dir, filepath.FromSlash(rel)))
}
