package status

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
)

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func TestRingsBounded(t *testing.T) {
	c := &clock{t: t0}
	r := New(Options{Now: c.Now, Changes: 5, Failures: 3})
	for i := range 12 {
		r.Handle(destination.Event{Kind: destination.EventFetched, Set: "s", URI: fmt.Sprint("http://h/", i), Path: fmt.Sprint(i), Bytes: int64(i)})
		r.Handle(destination.Event{Kind: destination.EventFailed, Set: "s", URI: fmt.Sprint("http://h/", i), Error: fmt.Sprint("e", i)})
	}
	s := r.Snapshot()
	if len(s.Changes) != 5 || len(s.Failures) != 3 {
		t.Fatalf("rings: %d changes, %d failures", len(s.Changes), len(s.Failures))
	}
	for i, ch := range s.Changes {
		if want := fmt.Sprint(11 - i); ch.Path != want || ch.Bytes != int64(11-i) || ch.Type != "fetched" {
			t.Errorf("change %d: %+v, want path %s", i, ch, want)
		}
	}
	for i, f := range s.Failures {
		if want := fmt.Sprint("e", 11-i); f.Error != want || f.Outcome != GaveUp {
			t.Errorf("failure %d: %+v, want %s", i, f, want)
		}
	}
	if s.Totals.Fetched != 12 || s.Totals.Failed != 12 || s.Totals.Bytes != 66 {
		t.Errorf("totals %+v", s.Totals)
	}
	// Fewer than the bound: all, newest first.
	r = New(Options{Now: c.Now})
	r.Handle(destination.Event{Kind: destination.EventDeleted, Set: "s", Path: "a", Change: "deleted"})
	r.Handle(destination.Event{Kind: destination.EventRetry, URI: "http://h/b", Error: "503"})
	s = r.Snapshot()
	if len(s.Changes) != 1 || s.Changes[0].Type != "deleted" || len(s.Failures) != 1 || s.Failures[0].Outcome != Retried {
		t.Errorf("%+v %+v", s.Changes, s.Failures)
	}
}

func TestBucketsRollOver(t *testing.T) {
	c := &clock{t: t0.Add(10 * time.Second)}
	r := New(Options{Now: c.Now})
	fetched := func(n int64) {
		r.Handle(destination.Event{Kind: destination.EventFetched, Set: "s", Bytes: n})
	}
	fetched(100)
	fetched(1)
	c.Add(30 * time.Minute)
	fetched(5)
	s := r.Snapshot()
	if len(s.Throughput) != Minutes {
		t.Fatalf("%d buckets", len(s.Throughput))
	}
	last := s.Throughput[Minutes-1]
	if !last.Start.Equal(t0.Add(30*time.Minute)) || last.Files != 1 || last.Bytes != 5 {
		t.Errorf("current minute %+v", last)
	}
	if m := s.Throughput[Minutes-31]; !m.Start.Equal(t0) || m.Files != 2 || m.Bytes != 101 {
		t.Errorf("30 minutes ago %+v", m)
	}
	// 59 minutes after the first: still in the window, the oldest bucket.
	c.Add(29 * time.Minute)
	s = r.Snapshot()
	if m := s.Throughput[0]; !m.Start.Equal(t0) || m.Files != 2 {
		t.Errorf("oldest bucket %+v", m)
	}
	// An hour after: gone, and its slot (the same index) serves the new
	// minute without the old counts.
	c.Add(time.Minute)
	fetched(7)
	s = r.Snapshot()
	var files, byts int64
	for _, m := range s.Throughput {
		files += m.Files
		byts += m.Bytes
	}
	if files != 2 || byts != 12 {
		t.Errorf("after an hour: %d files, %d bytes in the window, want 2, 12", files, byts)
	}
	if s.Totals.Fetched != 4 || s.Totals.Bytes != 113 {
		t.Errorf("totals %+v", s.Totals)
	}
	// An event older than the window (a late stamp) is counted in the
	// totals, not in a bucket it would wrongly fill.
	r.Handle(destination.Event{Kind: destination.EventFetched, Time: t0.Add(-time.Hour), Bytes: 1000})
	s = r.Snapshot()
	for _, m := range s.Throughput {
		if m.Bytes >= 1000 {
			t.Errorf("late event in bucket %+v", m)
		}
	}
}

// model is the simplest account of the events: every one kept.
type model struct {
	events []destination.Event
}

func (m *model) snapshot(now time.Time, maxChanges, maxFailures int) (changes []Change, failures []Failure, tot Totals, through []Minute, sets map[string]Set) {
	sets = map[string]Set{}
	pending := map[string]int{}
	set := func(n string) Set {
		s, ok := sets[n]
		if !ok {
			s = Set{Name: n}
		}
		return s
	}
	for _, e := range m.events {
		switch e.Kind {
		case destination.EventFetched, destination.EventDeleted:
			typ, b := e.Change, e.Bytes
			if e.Kind == destination.EventDeleted {
				b = 0
			}
			if typ == "" {
				typ = map[string]string{destination.EventFetched: "fetched", destination.EventDeleted: "deleted"}[e.Kind]
			}
			changes = append(changes, Change{Time: e.Time, Set: e.Set, Type: typ, URI: e.URI, Path: e.Path, Bytes: b, DateTime: e.DateTime})
			if e.Kind == destination.EventFetched {
				tot.Fetched++
				tot.Bytes += b
			} else {
				tot.Deleted++
			}
			s := set(e.Set)
			if e.DateTime.After(s.Newest) {
				s.Newest = e.DateTime
			}
			sets[e.Set] = s
		case destination.EventFailed, destination.EventRetry:
			o := GaveUp
			if e.Kind == destination.EventRetry {
				o = Retried
				tot.Retries++
			} else {
				tot.Failed++
				pending[e.Set]++
			}
			failures = append(failures, Failure{Time: e.Time, Set: e.Set, URI: e.URI, Error: e.Error, Outcome: o})
		case destination.EventSkipped:
			tot.Skipped++
		case destination.EventDone:
			tot.Runs++
			s := set(e.Set)
			s.LastRun, s.Mode, s.Summary = e.Time, e.Mode, e.Message
			s.Failed, pending[e.Set] = pending[e.Set], 0
			if e.Checkpoint != nil {
				cp := *e.Checkpoint
				s.Checkpoint = &cp
			}
			if !e.SourceUntil.IsZero() {
				s.SourceUntil = e.SourceUntil
			}
			sets[e.Set] = s
		}
	}
	for n, s := range sets {
		if s.Checkpoint != nil && !s.Checkpoint.Until.IsZero() {
			s.Age = now.Sub(s.Checkpoint.Until)
			if !s.SourceUntil.IsZero() {
				s.LagKnown = true
				s.Lag = max(0, s.SourceUntil.Sub(s.Checkpoint.Until))
			}
		}
		sets[n] = s
	}
	changes = lastReversed(changes, maxChanges)
	failures = lastReversed(failures, maxFailures)
	start := now.Truncate(time.Minute).Add(-(Minutes - 1) * time.Minute)
	for i := range Minutes {
		through = append(through, Minute{Start: start.Add(time.Duration(i) * time.Minute)})
	}
	for _, e := range m.events {
		if e.Kind != destination.EventFetched && e.Kind != destination.EventDeleted {
			continue
		}
		i := int(e.Time.Sub(start) / time.Minute)
		if e.Time.Before(start) || i >= Minutes {
			continue
		}
		through[i].Files++
		if e.Kind == destination.EventFetched {
			through[i].Bytes += e.Bytes
		}
	}
	return
}

func lastReversed[T any](s []T, n int) []T {
	out := []T{}
	for i := len(s) - 1; i >= 0 && len(out) < n; i-- {
		out = append(out, s[i])
	}
	return out
}

// TestModel: random sequences of applied changes, failures, runs ending
// and time steps; the Recorder's figures equal the model's after every
// step.
func TestModel(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 13))
			c := &clock{t: t0.Add(time.Duration(rng.IntN(60)) * time.Second)}
			maxC, maxF := 1+rng.IntN(20), 1+rng.IntN(10)
			r := New(Options{Now: c.Now, Changes: maxC, Failures: maxF})
			m := &model{}
			sets := []string{"a", "b", "c"}
			for step := range 600 {
				set := sets[rng.IntN(len(sets))]
				e := destination.Event{Time: c.Now(), Set: set, URI: fmt.Sprintf("http://src/%d", rng.IntN(100)), Path: fmt.Sprint(rng.IntN(100))}
				switch k := rng.IntN(10); {
				case k < 3:
					e.Kind, e.Bytes = destination.EventFetched, rng.Int64N(1<<20)
					e.Change = []string{"", "created", "updated"}[rng.IntN(3)]
					if rng.IntN(2) == 0 {
						e.DateTime = c.Now().Add(-time.Duration(rng.IntN(3600)) * time.Second)
					}
				case k < 4:
					e.Kind, e.Change = destination.EventDeleted, "deleted"
				case k < 5:
					e.Kind, e.Error = destination.EventFailed, fmt.Sprint("boom ", step)
				case k < 6:
					e.Kind, e.Error = destination.EventRetry, fmt.Sprint("503 ", step)
				case k < 7:
					e.Kind = destination.EventSkipped
				case k < 8:
					e.Kind, e.Mode, e.Message = destination.EventDone, "incremental", fmt.Sprint("run ", step)
					if rng.IntN(4) > 0 {
						e.Checkpoint = &destination.Checkpoint{Set: set, Baseline: true, Until: c.Now().Add(-time.Duration(rng.IntN(600)) * time.Second)}
					}
					if rng.IntN(3) > 0 {
						e.SourceUntil = c.Now().Add(-time.Duration(rng.IntN(300)) * time.Second)
					}
				default:
					// time passes: seconds, minutes, or more than the window
					switch rng.IntN(10) {
					case 0:
						c.Add(time.Duration(61+rng.IntN(120)) * time.Minute)
					case 1, 2, 3:
						c.Add(time.Duration(rng.IntN(10)) * time.Minute)
					default:
						c.Add(time.Duration(rng.IntN(90)) * time.Second)
					}
					continue
				}
				if e.URI != "" && e.Kind != destination.EventFetched && e.Kind != destination.EventDeleted && e.Kind != destination.EventFailed && e.Kind != destination.EventRetry {
					e.URI, e.Path = "", ""
				}
				r.Handle(e)
				m.events = append(m.events, e)
				if step%7 != 0 {
					continue
				}
				got := r.Snapshot()
				changes, failures, tot, through, msets := m.snapshot(c.Now(), maxC, maxF)
				if !reflect.DeepEqual(got.Changes, changes) {
					t.Fatalf("step %d: changes\n got %+v\nwant %+v", step, got.Changes, changes)
				}
				// Failures carry no Path in the model for retries: compare the figures.
				if len(got.Failures) != len(failures) {
					t.Fatalf("step %d: %d failures, want %d", step, len(got.Failures), len(failures))
				}
				for i := range failures {
					g, w := got.Failures[i], failures[i]
					if !g.Time.Equal(w.Time) || g.Error != w.Error || g.Outcome != w.Outcome || g.Set != w.Set || g.URI != w.URI {
						t.Fatalf("step %d: failure %d: %+v, want %+v", step, i, g, w)
					}
				}
				if got.Totals != tot {
					t.Fatalf("step %d: totals %+v, want %+v", step, got.Totals, tot)
				}
				if !reflect.DeepEqual(got.Throughput, through) {
					t.Fatalf("step %d: throughput\n got %+v\nwant %+v", step, got.Throughput, through)
				}
				if len(got.Sets) != len(msets) {
					t.Fatalf("step %d: %d sets, want %d", step, len(got.Sets), len(msets))
				}
				for _, g := range got.Sets {
					w := msets[g.Name]
					if !reflect.DeepEqual(g, w) {
						t.Fatalf("step %d: set %s\n got %+v\nwant %+v", step, g.Name, g, w)
					}
				}
				if got.Uptime != c.Now().Sub(r.started) {
					t.Fatalf("uptime %v", got.Uptime)
				}
			}
		})
	}
}

func TestSubscriptionAndAudit(t *testing.T) {
	c := &clock{t: t0}
	r := New(Options{Now: c.Now})
	exp := t0.Add(24 * time.Hour)
	r.Handle(destination.Event{Kind: destination.EventSubscription, Set: "s", Status: destination.SubNotifications, URI: "http://u:secret@hub/", Expires: exp})
	r.Handle(destination.Event{Kind: destination.EventSubscription, Set: "p", Status: destination.SubPolling, Message: "the set offers no change notifications"})
	r.Handle(destination.Event{Kind: destination.EventPlan, Set: "s", Mode: "audit"})
	for _, st := range []string{destination.AuditInSync, destination.AuditInSync, destination.AuditMissing} {
		r.Handle(destination.Event{Kind: destination.EventAudit, Set: "s", Status: st})
	}
	s := r.Snapshot()
	if len(s.Sets) != 2 || s.Sets[0].Name != "p" || s.Sets[0].Follow != destination.SubPolling || s.Sets[0].Why == "" {
		t.Fatalf("%+v", s.Sets)
	}
	ss := s.Sets[1]
	if ss.Follow != destination.SubNotifications || !ss.Expires.Equal(exp) || ss.Hub != "http://hub/" {
		t.Errorf("subscription %+v", ss)
	}
	if ss.Audit[destination.AuditInSync] != 2 || ss.Audit[destination.AuditMissing] != 1 {
		t.Errorf("audit %+v", ss.Audit)
	}
	// The snapshot is a copy.
	ss.Audit[destination.AuditMissing] = 99
	if r.Snapshot().Sets[1].Audit[destination.AuditMissing] != 1 {
		t.Error("snapshot shares the audit map")
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pw@example.org/a?b#c":                  "https://example.org/a?b#c",
		"http://example.org/":                                "http://example.org/",
		`Get "https://u:p@h.example/x": EOF`:                 `Get "https://h.example/x": EOF`,
		"no url here":                                        "no url here",
		"two: http://a:b@x/ and ftp://c@y/z, not mail@x.org": "two: http://x/ and ftp://y/z, not mail@x.org",
	} {
		if got := RedactText(in); got != want {
			t.Errorf("RedactText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Redact("https://user:pw@example.org/a"); got != "https://example.org/a" {
		t.Error(got)
	}
	r := New(Options{Source: "http://me:pw@src.example/"})
	r.Handle(destination.Event{Kind: destination.EventFailed, URI: "http://me:pw@src.example/a", Error: `Get "http://me:pw@src.example/a": 500`})
	b, _ := json.Marshal(r.Snapshot())
	if strings.Contains(string(b), "pw") {
		t.Errorf("a password in the snapshot: %s", b)
	}
}

func TestHandler(t *testing.T) {
	c := &clock{t: t0}
	r := New(Options{Now: c.Now, Source: "http://src.example/", Dest: "/tmp/d", Command: "sync --follow"})
	r.Handle(destination.Event{Kind: destination.EventFetched, Set: "<b>set</b>", URI: "javascript:alert(1)", Path: "<script>alert(1)</script>", Bytes: 3, Change: "created"})
	r.Handle(destination.Event{Kind: destination.EventFailed, Set: "t", URI: "http://src.example/x", Error: "<img src=x onerror=alert(1)>"})
	cp := destination.Checkpoint{Set: "s", Baseline: true, Until: t0.Add(-time.Minute)}
	r.Handle(destination.Event{Kind: destination.EventDone, Set: "s", Checkpoint: &cp, SourceUntil: t0.Add(-time.Minute), Message: "incremental: fetched 1"})
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()

	res, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	page := string(body)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") || res.Header.Get("Content-Security-Policy") == "" {
		t.Fatalf("%d %v", res.StatusCode, res.Header)
	}
	for _, bad := range []string{"<script>alert", "<img src=x", "<b>set</b>", `href="javascript:`} {
		if strings.Contains(page, bad) {
			t.Errorf("unescaped %q in the page", bad)
		}
	}
	for _, want := range []string{"caught up", "&lt;script&gt;", "http-equiv=\"refresh\"", `<svg class="chart"`, "given up", "status.json"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}

	res, err = http.Get(srv.URL + "/status.json")
	if err != nil {
		t.Fatal(err)
	}
	var s Snapshot
	err = json.NewDecoder(res.Body).Decode(&s)
	res.Body.Close()
	if err != nil || res.Header.Get("Content-Type") != "application/json" {
		t.Fatal(err, res.Header)
	}
	if len(s.Changes) != 1 || len(s.Failures) != 1 || len(s.Sets) != 2 || s.Sets[1].Name != "s" || s.Sets[1].Checkpoint == nil || !s.Sets[1].LagKnown || s.Sets[1].Lag != 0 {
		t.Errorf("%+v", s)
	}
	for path, code := range map[string]int{"/nope": 404, "/status.json/x": 404} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != code {
			t.Errorf("%s: %d", path, res.StatusCode)
		}
	}
	res, err = http.Post(srv.URL+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", res.StatusCode)
	}
}

func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "report.html")
	r := New(Options{Source: "http://src.example/"})
	r.Handle(destination.Event{Kind: destination.EventFetched, Set: "s", Path: "a.txt", URI: "http://src.example/a.txt", Bytes: 5})
	for range 2 { // the second replaces the first
		if err := r.WriteReport(p); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if !strings.Contains(page, "a.txt") || strings.Contains(page, "http-equiv=\"refresh\"") || strings.Contains(page, "<script") {
		t.Errorf("report:\n%s", page)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
	if err := r.WriteReport(filepath.Join(dir, "no", "such", "dir.html")); err == nil {
		t.Error("no error for a missing directory")
	}
}

// TestConcurrent: Handle from many goroutines while pages are served
// (run with -race).
func TestConcurrent(t *testing.T) {
	r := New(Options{Changes: 10, Failures: 10})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				r.Handle(destination.Event{Kind: destination.EventFetched, Set: fmt.Sprint("s", g%3), Bytes: 1})
				if i%50 == 0 {
					r.Handle(destination.Event{Kind: destination.EventFailed, Set: "s0", Error: "x"})
					WriteHTML(io.Discard, r.Snapshot(), true)
				}
			}
		}()
	}
	wg.Wait()
	s := r.Snapshot()
	if s.Totals.Fetched != 4000 || s.Totals.Failed != 80 || len(s.Changes) != 10 {
		t.Errorf("%+v", s.Totals)
	}
}

// BenchmarkHandle: the cost of one event (the recorder sits on the hot
// path of every resource when --status-addr or --report is given).
func BenchmarkHandle(b *testing.B) {
	r := New(Options{})
	e := destination.Event{Kind: destination.EventFetched, Set: "s", URI: "http://src.example/a/b.txt", Path: "a/b.txt", Bytes: 1234, Time: time.Now()}
	b.ReportAllocs()
	for b.Loop() {
		r.Handle(e)
	}
}

// BenchmarkPage: a full page (full rings, an hour of buckets).
func BenchmarkPage(b *testing.B) {
	c := &clock{t: t0}
	r := New(Options{Now: c.Now})
	for i := range 3600 {
		c.Add(time.Second)
		r.Handle(destination.Event{Kind: destination.EventFetched, Set: "s", URI: fmt.Sprint("http://src.example/", i), Path: fmt.Sprint(i), Bytes: int64(i)})
		r.Handle(destination.Event{Kind: destination.EventFailed, Set: "s", URI: fmt.Sprint("http://src.example/", i), Error: "boom"})
	}
	b.ReportAllocs()
	for b.Loop() {
		WriteHTML(io.Discard, r.Snapshot(), true)
	}
}
