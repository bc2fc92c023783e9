package status

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/websub/hub"
)

// counting wraps a Store and counts what the page reads.
type counting struct {
	store.Store
	journal   atomic.Int64 // journal records yielded
	resources atomic.Int64 // inventory records yielded
	passes    atomic.Int64 // inventory passes started
	full      atomic.Int64 // Resources (one snapshot of everything) calls
}

func (c *counting) Journal(ctx context.Context, from uint64) iter.Seq2[store.Change, error] {
	return func(yield func(store.Change, error) bool) {
		for ch, err := range c.Store.Journal(ctx, from) {
			c.journal.Add(1)
			if !yield(ch, err) {
				return
			}
		}
	}
}

func (c *counting) JournalBetween(ctx context.Context, from, until time.Time) iter.Seq2[store.Change, error] {
	return func(yield func(store.Change, error) bool) {
		for ch, err := range c.Store.JournalBetween(ctx, from, until) {
			c.journal.Add(1)
			if !yield(ch, err) {
				return
			}
		}
	}
}

func (c *counting) ResourcesIn(ctx context.Context, from, to string) iter.Seq2[store.Resource, error] {
	c.passes.Add(1)
	return func(yield func(store.Resource, error) bool) {
		for r, err := range c.Store.ResourcesIn(ctx, from, to) {
			c.resources.Add(1)
			if !yield(r, err) {
				return
			}
		}
	}
}

func (c *counting) Resources(ctx context.Context) iter.Seq2[store.Resource, error] {
	c.full.Add(1)
	return c.Store.Resources(ctx)
}

// seed puts n resources (a baseline) and then changes journal records,
// spread over the last 40 days before now.
func seed(t testing.TB, st store.Store, n, changes int, now time.Time) {
	t.Helper()
	ctx := context.Background()
	start := now.Add(-40 * 24 * time.Hour)
	for i := 0; i < n; i += 10000 {
		var b store.Batch
		b.Baseline = true
		for j := i; j < min(n, i+10000); j++ {
			b.Changes = append(b.Changes, store.Change{Kind: rs.Created, Time: start, Resource: store.Resource{Path: fmt.Sprintf("dir%03d/file%07d.txt", j%500, j), Size: int64(j % 5000), LastMod: start}})
		}
		if _, _, err := st.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	step := 40 * 24 * time.Hour / time.Duration(max(changes, 1))
	for i := 0; i < changes; i += 5000 {
		var b store.Batch
		for j := i; j < min(changes, i+5000); j++ {
			b.Changes = append(b.Changes, store.Change{Kind: rs.Updated, Time: start.Add(time.Duration(j) * step),
				Resource: store.Resource{Path: fmt.Sprintf("dir%03d/file%07d.txt", j%n%500, j%n), Size: int64(j % 5000), LastMod: start}})
		}
		if _, _, err := st.Apply(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
}

func openBolt(t testing.TB) *bolt.DB {
	t.Helper()
	db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestPageHeadersAndFigures: a real store; the page is HTML with the
// no-script CSP, HEAD has no body, other methods 405; figures match.
func TestPageHeadersAndFigures(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 30, 0, 0, time.UTC)
	st := openBolt(t)
	seed(t, st, 1000, 960, now) // one change every hour for 40 days
	base := "http://src.test/"
	h := New(Config{BaseURL: base, Sets: []Set{{Name: "books", Store: st, ResourceBase: base, CapabilityList: base + ".resourcesync/books/capabilitylist.xml"}},
		Now: func() time.Time { return now }, Wait: 10 * time.Second})
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Security-Policy") != web.CSP || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	if r, _ := http.Head(srv.URL); r.StatusCode != 200 || r.ContentLength > 0 {
		t.Errorf("HEAD: %d %d", r.StatusCode, r.ContentLength)
	}
	if r, _ := http.Post(srv.URL, "text/plain", nil); r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", r.StatusCode)
	}

	pg := get(t, h)
	if strings.Contains(pg.body, "<script") {
		t.Error("a script on the page")
	}
	if !strings.Contains(pg.body, `<meta http-equiv="refresh" content="30">`) {
		t.Error("no meta refresh")
	}
	sp := pg.sets["books"]
	if sp == nil {
		t.Fatal("no set books")
	}
	var bytes int64
	for j := range 1000 {
		bytes += int64(j % 5000)
	}
	// one change an hour at :30, the last an hour ago
	for name, want := range map[string]int64{"resources": 1000, "bytes": bytes, "records": 960, "last24h": 23, "last30d": 30*24 - 12} {
		if got := sp.figure(t, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
	if len(sp.hourly) != 24 || len(sp.daily) != 30 || len(sp.newest) != NewestRecords {
		t.Errorf("bars %d %d, newest %d", len(sp.hourly), len(sp.daily), len(sp.newest))
	}
	if sp.newest[0].seq != 960 || sp.newest[0].url != base+"dir459/file0000959.txt" || sp.newest[0].kind != "updated" {
		t.Errorf("newest: %+v", sp.newest[0])
	}
	if sp.caplist != base+".resourcesync/books/capabilitylist.xml" {
		t.Errorf("caplist %q", sp.caplist)
	}
}

// TestBoundedCost: however large the journal and the inventory, a page
// reads a bounded number of journal records, and the inventory is summed
// once while nothing changes (never with a whole-inventory snapshot).
func TestBoundedCost(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 30, 0, 0, time.UTC)
	st := &counting{Store: openBolt(t)}
	seed(t, st.Store, 20000, 50000, now)
	h := New(Config{BaseURL: "http://src.test/", Sets: []Set{{Name: "s", Store: st}}, Now: func() time.Time { return now },
		MaxAge: time.Nanosecond, Wait: 10 * time.Second, BytesInterval: time.Hour})
	defer h.Close()
	for i := range 20 {
		before := st.journal.Load()
		get(t, h)
		if n := st.journal.Load() - before; n > NewestRecords+60 {
			t.Fatalf("request %d read %d journal records", i, n)
		}
	}
	if p, r := st.passes.Load(), st.resources.Load(); p != 1 || r != 20000 {
		t.Errorf("%d inventory passes, %d records read; want 1 and 20000", p, r)
	}
	if st.full.Load() != 0 {
		t.Error("Resources (a whole-inventory snapshot) called")
	}
	// A change: the size shown is the last sum, dated, until the pause
	// (BytesInterval) is over.
	if _, _, err := st.Apply(context.Background(), store.Batch{Changes: []store.Change{{Kind: rs.Created, Time: now, Resource: store.Resource{Path: "new", Size: 1 << 30}}}}); err != nil {
		t.Fatal(err)
	}
	pg := get(t, h)
	if st.passes.Load() != 1 || !strings.Contains(pg.body, "counted 2026-11-25 12:30:00Z") {
		t.Errorf("passes %d; the size should be dated", st.passes.Load())
	}
}

// fakeHub is a hub with subscriptions whose callbacks carry secrets in
// their paths and queries.
type fakeHub struct{}

func (fakeHub) Stats() hub.Stats {
	return hub.Stats{Subscriptions: 3, PendingVerifications: 1, DeadLetters: 2, Node: "n1"}
}

func (fakeHub) CountSubscriptions(ctx context.Context, topic string) (int, error) { return 3, nil }

func (fakeHub) SubscriptionStates(ctx context.Context, topic string, offset, limit int) ([]hub.SubscriptionState, bool, error) {
	exp := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	all := []hub.SubscriptionState{
		{Topic: topic, Callback: "https://mirror.example/cb/SECRETPATH?token=SECRETQUERY", Cursor: 7, Head: 9, Backlog: 2, Expires: exp, HasSecret: true,
			Failures: 3, LastError: `Post "https://mirror.example/cb/SECRETPATH?token=SECRETQUERY": dial tcp: connection refused`},
		{Topic: topic, Callback: "https://mirror.example/cb/OTHERSECRET", Cursor: 9, Head: 9, Expires: exp.Add(time.Hour)},
		{Topic: topic, Callback: "http://10.1.2.3:8091/", Cursor: 9, Head: 9, Expires: exp},
	}
	all = all[min(offset, len(all)):]
	return all[:min(limit, len(all))], limit < len(all), nil
}

func (fakeHub) DeadLetterPage(ctx context.Context, offset, limit int) ([]hub.DeadLetter, bool, error) {
	all := []hub.DeadLetter{
		{ID: 1, Topic: "http://src.test/.resourcesync/s/notifications", Callback: "https://mirror.example/cb/SECRETPATH?token=SECRETQUERY", Seq: 3, Attempts: 9,
			LastError: `Post "https://mirror.example/cb/SECRETPATH?token=SECRETQUERY": dial tcp: connection refused`, At: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)},
		{ID: 2, Topic: "http://other/", Callback: "http://x.example/cb/SECRETPATH", Seq: 1, Attempts: 1, LastError: "HTTP 500 at /cb/SECRETPATH", At: time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)},
	}
	all = all[min(offset, len(all)):]
	return all[:min(limit, len(all))], limit < len(all), nil
}

// TestHubSection: subscribers are shown by callback host with a count,
// backlog and failures; no callback path, query or secret is on the page.
func TestHubSection(t *testing.T) {
	st := openBolt(t)
	h := New(Config{BaseURL: "http://src.test/", Sets: []Set{{Name: "s", Store: st, Topic: "http://src.test/.resourcesync/s/notifications"}},
		HubURL: "http://src.test/.resourcesync/hub", Hub: fakeHub{}, Metrics: "http://src.test/.resourcesync/metrics", Wait: 10 * time.Second})
	defer h.Close()
	pg := get(t, h)
	for _, secret := range []string{"SECRETPATH", "SECRETQUERY", "OTHERSECRET", "token="} {
		if strings.Contains(pg.body, secret) {
			t.Errorf("the page shows %q", secret)
		}
	}
	for _, want := range []string{
		`<td>s</td><td><code>mirror.example</code></td><td class="num">2</td><td class="num">2 (2)</td><td class="num bad" title="Post &#34;mirror.example&#34;: dial tcp: connection refused">1</td>`,
		`<td>s</td><td><code>10.1.2.3:8091</code></td><td class="num">1</td><td class="num">0</td>`,
		`data-figure="subscriptions" data-value="3"`, `data-figure="dead" data-value="2"`, `data-figure="backlog" data-value="2"`,
		`dial tcp: connection refused`, `(other topic)`, `href="http://src.test/.resourcesync/metrics"`,
	} {
		if !strings.Contains(pg.body, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	// A channel with more subscriptions than are read says so.
	h2 := New(Config{BaseURL: "http://src.test/", Sets: []Set{{Name: "s", Store: st, Topic: "http://src.test/.resourcesync/s/notifications"}},
		HubURL: "http://src.test/.resourcesync/hub", Hub: fakeHub{}, SubscriptionLimit: 1, Wait: 10 * time.Second})
	defer h2.Close()
	if pg := get(t, h2); !strings.Contains(pg.body, "3 subscriptions in all") || !strings.Contains(pg.body, "≥ 2") {
		t.Error("a partial read of the subscriptions is not said")
	}
}

// TestDocuments: the published Change Lists and dumps, newest first, with
// their sizes and links; the older ones counted.
func TestDocuments(t *testing.T) {
	docs := t.TempDir()
	dir := filepath.Join(docs, ".resourcesync", "s")
	write := func(name string, n int) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("changelist.xml", 100)
	for i := range 12 {
		write(fmt.Sprintf("changelists/20261125T%02d0000.000000000Z-%d.xml", i, i*10+1), 1000)
	}
	write("changedump.xml", 50)
	write("changedumps/20261125T000000.000000000Z-1.zip", 4096)
	write("changedumps/20261125T000000.000000000Z-1.manifest.xml", 10)
	write("resourcedump.xml", 60)
	write("resourcedumps/20261125T000000.000000000Z/part-00001.zip", 2048)
	h := New(Config{BaseURL: "http://src.test/", Docs: docs, Sets: []Set{{Name: "s", Store: openBolt(t)}}, Wait: 10 * time.Second})
	defer h.Close()
	pg := get(t, h)
	sp := pg.sets["s"]
	b := "http://src.test/.resourcesync/s/"
	want := []string{b + "changelist.xml"}
	for i := 11; i >= 2; i-- {
		want = append(want, fmt.Sprintf("%schangelists/20261125T%02d0000.000000000Z-%d.xml", b, i, i*10+1))
	}
	want = append(want, b+"changelist.xml", b+"resourcedump.xml", b+"resourcedumps/20261125T000000.000000000Z/part-00001.zip",
		b+"changedump.xml", b+"changedumps/20261125T000000.000000000Z-1.zip")
	if fmt.Sprint(sp.docs) != fmt.Sprint(want) {
		t.Errorf("links\n got %v\nwant %v", sp.docs, want)
	}
	if !strings.Contains(pg.body, "and 2 older") || !strings.Contains(pg.body, `title="12,000 bytes"`) {
		t.Error("no count of the older Change Lists or their total size")
	}
}

// TestStoreError: a store that cannot be read gives a page that says so,
// without the error's text (paths of the server).
func TestStoreError(t *testing.T) {
	st := openBolt(t)
	st.Close()
	h := New(Config{BaseURL: "http://src.test/", Sets: []Set{{Name: "s", Store: st}}, Wait: 10 * time.Second})
	defer h.Close()
	pg := get(t, h)
	if !strings.Contains(pg.body, "the state could not be read") || strings.Contains(pg.body, store.ErrClosed.Error()) {
		t.Error("the error is not reported as it should")
	}
}

// TestWaitBounded: a request does not wait longer than Wait for slow
// figures; it shows the previous ones (or 503 before any).
func TestWaitBounded(t *testing.T) {
	slow := &slowStore{Store: openBolt(t), delay: make(chan struct{})}
	h := New(Config{BaseURL: "http://src.test/", Sets: []Set{{Name: "s", Store: slow}}, Wait: 50 * time.Millisecond})
	rec := httptest.NewRecorder()
	start := time.Now()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusServiceUnavailable || time.Since(start) > 2*time.Second {
		t.Errorf("%d after %v", rec.Code, time.Since(start))
	}
	close(slow.delay)
	h.Close()
}

type slowStore struct {
	store.Store
	delay chan struct{}
}

func (s *slowStore) Stats(ctx context.Context) (store.Stats, error) {
	select {
	case <-s.delay:
	case <-ctx.Done():
		return store.Stats{}, errors.New("cancelled")
	}
	return s.Store.Stats(ctx)
}
