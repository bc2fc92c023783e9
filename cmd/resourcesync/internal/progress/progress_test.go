package progress

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/resourcesync-go/resourcesync/destination"
)

// fakeClock is advanced by the test; the renderer only reads it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2026, 11, 22, 8, 0, 0, 0, time.UTC)

const failLine = "sync default: failed http://example.org/bad: 404 Not Found"

// run is a baseline of 10,000 fetched files with one of each notable event.
func run() []destination.Event {
	at := t0
	ev := func(e destination.Event) destination.Event {
		at = at.Add(time.Millisecond)
		e.Time = at
		return e
	}
	evs := []destination.Event{
		ev(destination.Event{Kind: destination.EventPhase, Message: "discovering http://example.org/"}),
		ev(destination.Event{Kind: destination.EventPlan, Set: "default", Mode: "baseline", Total: 10_003, TotalBytes: -1}),
	}
	for i := range 10_000 {
		evs = append(evs, ev(destination.Event{Kind: destination.EventFetched, Set: "default",
			URI: fmt.Sprintf("http://example.org/f/%d", i), Path: fmt.Sprintf("f/%d", i), Bytes: 410}))
		if i == 5000 {
			evs = append(evs,
				ev(destination.Event{Kind: destination.EventRetry, URI: "http://example.org/bad", Error: "503 Service Unavailable"}),
				ev(destination.Event{Kind: destination.EventFailed, Set: "default", URI: "http://example.org/bad", Path: "bad", Error: "404 Not Found"}),
				ev(destination.Event{Kind: destination.EventKept, Set: "default", URI: "http://example.org/mine", Path: "mine", Message: "changed locally"}),
				ev(destination.Event{Kind: destination.EventDeleted, Set: "default", URI: "http://example.org/gone", Path: "gone", Message: "not in the Resource List"}),
			)
		}
	}
	return append(evs, ev(destination.Event{Kind: destination.EventDone, Set: "default", Mode: "baseline",
		Message: "baseline: fetched 10000 (4.10 MB), skipped 0, deleted 1, kept 1, failed 1"}))
}

// feed hands evs to r, ticking every 100 events while the fake clock runs
// 20 s over the 10,000 files: long enough for Lines to report progress.
func feed(r *Renderer, clk *fakeClock, evs []destination.Event) {
	for i, e := range evs {
		r.Handle(e)
		if i%100 == 0 {
			clk.Advance(200 * time.Millisecond)
			r.tick()
		}
	}
	r.Close()
}

func TestModes(t *testing.T) {
	evs := run()
	tests := []struct {
		mode  Mode
		check func(t *testing.T, out string)
	}{
		{JSON, func(t *testing.T, out string) {
			var got []destination.Event
			sc := bufio.NewScanner(strings.NewReader(out))
			for sc.Scan() {
				var e destination.Event
				if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
					t.Fatalf("line %d: %v: %s", len(got)+1, err, sc.Bytes())
				}
				got = append(got, e)
			}
			if len(got) != len(evs) {
				t.Fatalf("%d lines for %d events", len(got), len(evs))
			}
			for i := range evs {
				// Field by field only on a mismatch: cmp over 10,000 events is slow under -race.
				if got[i] != evs[i] {
					t.Fatalf("event %d differs (-sent +decoded):\n%s", i, cmp.Diff(evs[i], got[i]))
				}
			}
		}},
		{Lines, func(t *testing.T, out string) {
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			for _, want := range []string{
				failLine,
				"sync default: baseline, 10,003 resources",
				"sync default: kept mine: changed locally",
				"sync default: deleted gone: not in the Resource List",
			} {
				if !contains(lines, want) {
					t.Errorf("no line %q", want)
				}
			}
			// The summary (the done event's message) is printed by the
			// command, once; the renderer does not repeat it.
			if strings.Contains(out, evs[len(evs)-1].Message) {
				t.Errorf("the done event's summary is printed:\n%s", out)
			}
			progress := regexp.MustCompile(`^sync default: [0-9,]+/10,003 resources, [0-9.]+ [KM]iB, [0-9,.]+/s, 1 failed, 1 retry$`)
			n := 0
			for _, l := range lines {
				if strings.Contains(l, "/f/") || strings.Contains(l, " f/") {
					t.Fatalf("per-file line: %q", l)
				}
				if progress.MatchString(l) {
					n++
				}
			}
			// 20 s of fake time: a progress line every 5 s, and none per file.
			if n < 2 || n > 5 || len(lines) > 15 {
				t.Errorf("%d lines, %d progress lines:\n%s", len(lines), n, out)
			}
			if strings.ContainsAny(out, "\r\x1b") {
				t.Errorf("Lines output has terminal controls:\n%q", out)
			}
		}},
		{Bars, func(t *testing.T, out string) {
			if n := strings.Count(out, "\r"); n < 10 {
				t.Errorf("%d carriage returns, want redraws", n)
			}
			if !strings.Contains(out, "\x1b[K") {
				t.Error("no clear-to-end-of-line")
			}
			// The failure must be a line of its own: the bar cleared before
			// it, a newline after it, nothing drawn over it.
			if !strings.Contains(out, "\r\x1b[K"+failLine+"\n") {
				t.Errorf("failure line not intact in %q", truncate(out, 2000))
			}
			if !regexp.MustCompile(`\rdefault baseline +[0-9,]+/10,003 +[0-9]+% \[=*>? *\]  [0-9.]+ [KM]iB  [0-9,.]+/s  [0-9.]+ KiB/s  ETA [0-9:]+  1 failed  1 retry\x1b\[K`).MatchString(out) {
				t.Errorf("no status line with a bar in %q", truncate(out, 2000))
			}
			// The run finished: the status line is cleared, and the summary
			// is left to the command's report.
			if !strings.HasSuffix(out, "\r\x1b[K") || strings.Contains(out, evs[len(evs)-1].Message) {
				t.Errorf("output ends %q, want the status line cleared and no summary", out[max(0, len(out)-200):])
			}
		}},
		{Quiet, func(t *testing.T, out string) {
			if out != failLine+"\n" {
				t.Errorf("got %q, want only the failure", out)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.mode.String(), func(t *testing.T) {
			var buf bytes.Buffer
			clk := &fakeClock{t: t0}
			r := newRenderer(&buf, tt.mode, clk.Now, func() int { return 120 })
			feed(r, clk, evs)
			tt.check(t, buf.String())
			want := Counts{Fetched: 10_000, Failed: 1, Kept: 1, Deleted: 1, Retries: 1, Bytes: 4_100_000}
			if diff := cmp.Diff(want, r.Counts()); diff != "" {
				t.Errorf("Counts (-want +got):\n%s", diff)
			}
		})
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

func TestLinesShortRunHasNoProgressLines(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: t0}
	r := newRenderer(&buf, Lines, clk.Now, nil)
	r.Handle(destination.Event{Kind: destination.EventPlan, Set: "s", Mode: "incremental", Total: -1, TotalBytes: -1})
	for range 10_000 {
		r.Handle(destination.Event{Kind: destination.EventSkipped, Set: "s", URI: "http://example.org/x"})
	}
	clk.Advance(4 * time.Second)
	r.tick()
	r.Handle(destination.Event{Kind: destination.EventDone, Set: "s", Message: "incremental: fetched 0"})
	r.Close()
	// The done event's summary is the command's to print: no line here.
	want := "sync s: incremental\n"
	if got := buf.String(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestBarsUnknownTotal(t *testing.T) {
	var buf bytes.Buffer
	clk := &fakeClock{t: t0}
	r := newRenderer(&buf, Bars, clk.Now, func() int { return 50 })
	r.Handle(destination.Event{Kind: destination.EventPlan, Set: "a-rather-long-set-name", Mode: "baseline", Total: -1, TotalBytes: -1})
	for range 3 {
		for range 1000 {
			r.Handle(destination.Event{Kind: destination.EventFetched, Bytes: 2_000_000})
		}
		clk.Advance(time.Second)
		r.tick()
	}
	r.Close() // interrupted: no done event, so the status line stays
	out := buf.String()
	last := out[strings.LastIndexByte(strings.TrimSuffix(out, "\n"), '\r')+1:]
	want := "a-rather-long-set-name baseline 3,000  5.6 GiB\x1b[K\n"
	if last != want {
		t.Errorf("last status line %q, want %q (fields that do not fit in 49 columns dropped, no bar or percent)", last, want)
	}
}

func TestNotesLimited(t *testing.T) {
	var buf bytes.Buffer
	r := newRenderer(&buf, Lines, time.Now, nil)
	for i := range 10 * maxNotes {
		r.Handle(destination.Event{Kind: destination.EventDeleted, Set: "s", Path: fmt.Sprint("d/", i)})
		r.Handle(destination.Event{Kind: destination.EventAudit, Set: "s", Path: fmt.Sprint("a/", i), Status: destination.AuditInSync})
	}
	r.Close()
	out := buf.String()
	if n := strings.Count(out, "\n"); n != maxNotes+1 {
		t.Errorf("%d lines, want %d deletions and one notice", n, maxNotes)
	}
	if !strings.HasSuffix(out, "sync s: further deleted not listed (the totals are in the summary)\n") {
		t.Errorf("no notice at the end of %q", out[len(out)-200:])
	}
	if c := r.Counts(); c.Deleted != 10*maxNotes || c.Audit[destination.AuditInSync] != 10*maxNotes {
		t.Errorf("Counts %+v", c)
	}
}

func TestControlCharactersReplaced(t *testing.T) {
	var buf bytes.Buffer
	r := newRenderer(&buf, Quiet, time.Now, nil)
	r.Handle(destination.Event{Kind: destination.EventFailed, URI: "http://x/\x1b]0;pwned\a", Error: "bad\nstatus\u009b\xff"})
	r.Close()
	if got, want := buf.String(), "sync: failed http://x/?]0;pwned?: bad?status?\uFFFD\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestCountsConcurrent(t *testing.T) {
	for _, mode := range []Mode{Bars, Lines, JSON, Quiet} {
		t.Run(mode.String(), func(t *testing.T) {
			var buf lockedBuffer
			r := New(&buf, mode) // the real ticker runs alongside
			const workers, per = 8, 2000
			statuses := []string{destination.AuditInSync, destination.AuditChanged, "novel"}
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					r.Handle(destination.Event{Kind: destination.EventPlan, Set: "s", Total: workers * per})
					for i := range per {
						e := destination.Event{Set: "s", URI: fmt.Sprintf("http://example.org/%d/%d", w, i)}
						switch i % 8 {
						case 0, 1, 2:
							e.Kind, e.Bytes = destination.EventFetched, 3
						case 3:
							e.Kind = destination.EventSkipped
						case 4:
							e.Kind, e.Error = destination.EventFailed, "boom"
						case 5:
							e.Kind = destination.EventRetry
						case 6:
							e.Kind = destination.EventDeleted
						case 7:
							e.Kind, e.Status = destination.EventAudit, statuses[i/8%3]
						}
						r.Handle(e)
						if i%500 == 0 {
							r.Counts()
						}
					}
				})
			}
			wg.Wait()
			r.Close()
			const n = workers * per / 8
			want := Counts{Fetched: 3 * n, Skipped: n, Failed: n, Retries: n, Deleted: n, Bytes: 9 * n, Audit: map[string]int64{}}
			for i := 7; i < per; i += 8 {
				want.Audit[statuses[i/8%3]] += workers
			}
			if diff := cmp.Diff(want, r.Counts()); diff != "" {
				t.Errorf("Counts (-want +got):\n%s", diff)
			}
			if mode == Quiet {
				if got := strings.Count(buf.String(), "\n"); got != n {
					t.Errorf("%d failure lines, want %d", got, n)
				}
			}
			if mode == JSON {
				if got := strings.Count(buf.String(), "\n"); got != workers*(per+1) {
					t.Errorf("%d JSON lines, want %d", got, workers*(per+1))
				}
			}
		})
	}
}

// lockedBuffer lets the test read what the ticker goroutine wrote.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestCloseIdempotent(t *testing.T) {
	for _, mode := range []Mode{Auto, Bars, Lines, JSON, Quiet} {
		t.Run(mode.String(), func(t *testing.T) {
			var buf lockedBuffer
			r := New(&buf, mode)
			r.Handle(destination.Event{Kind: destination.EventPlan, Set: "s", Total: 2})
			r.Handle(destination.Event{Kind: destination.EventFailed, Set: "s", URI: "u", Error: "e"})
			r.Close()
			out := buf.String()
			r.Close()
			r.Handle(destination.Event{Kind: destination.EventFailed, Set: "s", URI: "u2", Error: "e"})
			r.Close()
			if got := buf.String(); got != out {
				t.Errorf("output after the first Close: %q", got[len(out):])
			}
			if !strings.Contains(out, `"u"`) && !strings.Contains(out, "failed u: e\n") {
				t.Errorf("failure missing from %q", out)
			}
			if c := r.Counts(); c.Failed != 2 {
				t.Errorf("Failed = %d, want 2: events after Close are still counted", c.Failed)
			}
		})
	}
}

func TestAutoWithoutTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, w := range []interface{ Write([]byte) (int, error) }{&bytes.Buffer{}, f} {
		r := New(w, Auto)
		r.Close()
		if r.mode != Lines {
			t.Errorf("Auto on %T: %v, want lines", w, r.mode)
		}
	}
}

func TestParseMode(t *testing.T) {
	for m := Auto; m <= Quiet; m++ {
		if got, err := ParseMode(strings.ToUpper(m.String())); got != m || err != nil {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseMode("fancy"); err == nil {
		t.Error("ParseMode(fancy): no error")
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", -1234567: "-1,234,567", 100000: "100,000"} {
		if got := group(n); got != want {
			t.Errorf("group(%d) = %q, want %q", n, got, want)
		}
	}
	for n, want := range map[int64]string{999: "999 B", 1024: "1.0 KiB", 4_100_000: "3.9 MiB", 1_048_570: "1.0 MiB", 1 << 40: "1.0 TiB"} {
		if got := formatBytes(n); got != want {
			t.Errorf("formatBytes(%d) = %q, want %q", n, got, want)
		}
	}
	for sec, want := range map[float64]string{0: "0:00", 59.6: "1:00", 754: "12:34", 3600*2 + 61: "2:01:01"} {
		if got, ok := formatETA(sec); got != want || !ok {
			t.Errorf("formatETA(%v) = %q, %v, want %q", sec, got, ok, want)
		}
	}
	if got := bar(0.5, 12); got != "[=====>    ]" {
		t.Errorf("bar(0.5, 12) = %q", got)
	}
	if got := bar(1, 6); got != "[====]" {
		t.Errorf("bar(1, 6) = %q", got)
	}
}

func BenchmarkHandleFetched(b *testing.B) {
	var buf lockedBuffer
	r := New(&buf, Bars)
	defer r.Close()
	e := destination.Event{Kind: destination.EventFetched, Set: "s", URI: "http://example.org/x", Bytes: 100}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Handle(e)
		}
	})
}

func TestStatusLineFits(t *testing.T) {
	clk := &fakeClock{t: t0}
	r := newRenderer(&bytes.Buffer{}, Bars, clk.Now, func() int { return 80 })
	r.Handle(destination.Event{Kind: destination.EventPlan, Set: "ünïcode-set", Mode: "baseline", Total: 1_000_000, TotalBytes: 5e9})
	for range 2 {
		for range 1234 {
			r.Handle(destination.Event{Kind: destination.EventFetched, Bytes: 1e6})
		}
		r.Handle(destination.Event{Kind: destination.EventFailed})
		r.Handle(destination.Event{Kind: destination.EventRetry})
		clk.Advance(2 * time.Second)
		r.tick()
	}
	for w := 1; w <= 200; w++ {
		s := r.statusLocked(w)
		if n := len([]rune(s)); n > max(w-1, 0) {
			t.Errorf("width %d: %d runes: %q", w, n, s)
		}
		if w >= 100 && !strings.Contains(s, "[") {
			t.Errorf("width %d: no bar: %q", w, s)
		}
		if w >= 64 && !strings.Contains(s, "  2.3 GiB/4.7 GiB") {
			t.Errorf("width %d: bytes dropped: %q", w, s)
		}
	}
}

// TestTotalEstimate: a total event gives an unknown-total plan a percent
// without a line of its own and without resetting what is done.
func TestTotalEstimate(t *testing.T) {
	var buf bytes.Buffer
	r := New(&buf, Lines)
	r.Handle(destination.Event{Kind: destination.EventPlan, Set: "s", Mode: "baseline", Total: -1, TotalBytes: -1})
	for range 10 {
		r.Handle(destination.Event{Kind: destination.EventFetched, Set: "s"})
	}
	r.Handle(destination.Event{Kind: destination.EventTotal, Set: "s", Total: 40})
	r.mu.Lock()
	total, done := r.total, r.handledLocked()-r.base
	r.mu.Unlock()
	r.Close()
	if total != 40 || done != 10 {
		t.Fatalf("total %d done %d", total, done)
	}
	if strings.Contains(buf.String(), "total") {
		t.Errorf("a line for the total event:\n%s", buf.String())
	}
}
