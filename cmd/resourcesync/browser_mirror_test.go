package main

import (
	"encoding/json"
	"fmt"
	"github.com/resourcesync-go/resourcesync/internal/httpserver"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/status"
	"github.com/resourcesync-go/resourcesync/internal/browsertest"
	"github.com/resourcesync-go/resourcesync/internal/web"
)

// getStatus reads the mirror's /status.json.
func getStatus(t *testing.T, statusURL string) status.Snapshot {
	t.Helper()
	res, err := http.Get(statusURL + "status.json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var s status.Snapshot
	if err := json.NewDecoder(res.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// newestChange reads the Source's Change List (and the lists its index
// names) and returns its newest change datetime.
func newestChange(t *testing.T, base string) time.Time {
	t.Helper()
	get := func(u string) string {
		res, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return string(b)
	}
	index := get(base + ".resourcesync/default/changelist.xml")
	all := index
	if strings.Contains(index, "<sitemapindex") {
		for _, m := range regexp.MustCompile(`<loc>([^<]+)</loc>`).FindAllStringSubmatch(index, -1) {
			all += get(m[1])
		}
	}
	var newest time.Time
	for _, m := range regexp.MustCompile(`datetime="([^"]+)"`).FindAllStringSubmatch(all, -1) {
		if d, err := time.Parse(time.RFC3339Nano, m[1]); err == nil && d.After(newest) {
			newest = d
		}
	}
	if newest.IsZero() {
		t.Fatalf("no change in the Source's Change List:\n%s", all)
	}
	return newest
}

// TestBrowserMirrorStatus: a real Source (serve --watch, embedded hub)
// and sync --follow --status-addr --report against it. Files change at
// the Source; one change clashes with a file already in DEST (a failure
// with its reason, the checkpoint held back, the lag shown), then the
// clash is cleared and the mirror catches up. Chromium shows the page:
// the changes applied, the checkpoint and lag matching the Source's
// Change List, the failure, the throughput chart, the subscription; the
// report written at exit is opened from a loopback server.
func TestBrowserMirrorStatus(t *testing.T) {
	b := browsertest.New(t)
	syncLoopbackOnly(t)
	dir := t.TempDir()
	for i := range 5 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte(strings.Repeat(fmt.Sprint("v1 ", i), 100)), 0o644)
	}
	addr := freeAddr(t)
	base := "http://" + addr + "/"
	sout, _ := background(t, "serve", "--addr", addr, "--watch", "--rescan-interval", "0", "--allow-private-callbacks", "--state", t.TempDir(), dir)
	waitFor(t, "the Source", 10*time.Second, func() bool { return strings.Contains(sout.String(), "change notifications") })

	dest := t.TempDir()
	report := filepath.Join(t.TempDir(), "mirror.html")
	fout, stopFollow := background(t, "sync", "--follow", "--listen", freeAddr(t), "--poll-interval", "300ms",
		"--status-addr", "127.0.0.1:0", "--report", report, base, dest)
	var statusURL string
	waitFor(t, "the status page", 15*time.Second, func() bool {
		m := regexp.MustCompile(`status page: (http://127\.0\.0\.1:\d+/)`).FindStringSubmatch(fout.String())
		if m != nil {
			statusURL = m[1]
		}
		return m != nil
	})
	waitFor(t, "the subscription", 15*time.Second, func() bool { return strings.Contains(fout.String(), "subscribed to") })
	waitFor(t, "the lease on the page", 10*time.Second, func() bool {
		s := getStatus(t, statusURL)
		return len(s.Sets) == 1 && s.Sets[0].Follow == "notifications" && !s.Sets[0].Expires.IsZero()
	})

	// Changes at the Source, pushed by notification.
	os.WriteFile(filepath.Join(dir, "f1.txt"), []byte("changed"), 0o644)
	os.WriteFile(filepath.Join(dir, "new0.txt"), []byte("new file"), 0o644)
	os.Remove(filepath.Join(dir, "f0.txt"))
	waitFor(t, "the pushed changes", 15*time.Second, func() bool {
		a, _ := os.ReadFile(filepath.Join(dest, "f1.txt"))
		n, _ := os.ReadFile(filepath.Join(dest, "new0.txt"))
		_, err := os.Stat(filepath.Join(dest, "f0.txt"))
		return string(a) == "changed" && string(n) == "new file" && os.IsNotExist(err)
	})

	// A clash: DEST has clash.txt (not written by resourcesync) with
	// other bytes when the Source creates it. Then a later change: the
	// checkpoint stays at the clash, the Source is ahead.
	os.WriteFile(filepath.Join(dest, "clash.txt"), []byte("mine"), 0o644)
	os.WriteFile(filepath.Join(dir, "clash.txt"), []byte("theirs"), 0o644)
	waitFor(t, "the failure", 15*time.Second, func() bool { return getStatus(t, statusURL).Totals.Failed > 0 })
	time.Sleep(1100 * time.Millisecond)
	os.WriteFile(filepath.Join(dir, "new1.txt"), []byte("after the clash"), 0o644)
	waitFor(t, "new1 applied, the clash holding the checkpoint", 15*time.Second, func() bool {
		n, _ := os.ReadFile(filepath.Join(dest, "new1.txt"))
		s := getStatus(t, statusURL)
		return string(n) == "after the clash" && s.Sets[0].Failed > 0 && s.Sets[0].Lag > 0
	})
	s := getStatus(t, statusURL)
	if f := s.Failures[0]; !strings.Contains(f.Error, "not overwritten") || f.Path != "clash.txt" || f.Outcome != status.GaveUp {
		t.Errorf("failure %+v", f)
	}
	b.Navigate(t, statusURL)
	if lag := b.Text(t, ".set .lag"); !strings.Contains(lag, "behind") || !strings.Contains(lag, "failed in the last run") {
		t.Errorf("lag while the clash holds the checkpoint: %q", lag)
	}
	if f := b.Text(t, "#failures-table tbody tr"); !strings.Contains(f, "clash.txt") || !strings.Contains(f, "not overwritten") || !strings.Contains(f, "given up") {
		t.Errorf("failure row: %q", f)
	}
	b.Screenshot(t, "mirror-failure")

	// The clash cleared: the next change brings the mirror up to date.
	os.Remove(filepath.Join(dest, "clash.txt"))
	os.WriteFile(filepath.Join(dir, "new2.txt"), []byte("all good"), 0o644)
	var last string
	caughtUp := func() bool {
		c, _ := os.ReadFile(filepath.Join(dest, "clash.txt"))
		n, _ := os.ReadFile(filepath.Join(dest, "new2.txt"))
		s := getStatus(t, statusURL)
		set := s.Sets[0]
		// new2 among the newest changes, not necessarily the newest: a
		// catch-up fetches clash.txt and new2.txt concurrently, and they
		// are recorded as they complete.
		newestPath, sawNew2 := "", false
		for i, c := range s.Changes {
			if i == 0 {
				newestPath = c.Path
			}
			if i < 3 && c.Path == "new2.txt" {
				sawNew2 = true
			}
		}
		last = fmt.Sprintf("clash.txt %q, new2.txt %q, failed %d, lag known %v, lag %v, checkpoint %+v, newest %v, newest change %q",
			c, n, set.Failed, set.LagKnown, set.Lag, set.Checkpoint, set.Newest, newestPath)
		// The run that fetched new2 has ended (its done event recorded the
		// checkpoint) and nothing holds the checkpoint back.
		return string(c) == "theirs" && string(n) == "all good" && set.Failed == 0 && set.LagKnown && set.Lag == 0 &&
			set.Checkpoint != nil && !set.Checkpoint.Until.Before(set.Newest) && sawNew2
	}
	// Generous: the whole suite runs beside this test on two cores.
	for deadline := time.Now().Add(60 * time.Second); !caughtUp(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for the catch-up: %s\nsync's output:\n%s", last, fout.String())
		}
	}

	// The figures against the Source's own Change List.
	newest := newestChange(t, base)
	s = getStatus(t, statusURL)
	set := s.Sets[0]
	if set.Checkpoint == nil || set.Checkpoint.Until.Before(newest) || set.SourceUntil.Before(newest) || !set.Checkpoint.Baseline {
		t.Errorf("checkpoint %+v, source until %v; the Source's newest change %v", set.Checkpoint, set.SourceUntil, newest)
	}
	if set.Newest.IsZero() || set.Newest.After(set.Checkpoint.Until) {
		t.Errorf("newest applied %v, checkpoint %v", set.Newest, set.Checkpoint.Until)
	}

	b.Navigate(t, statusURL)
	if h := b.Text(t, "h1"); !strings.Contains(h, base) {
		t.Errorf("title %q", h)
	}
	if cp := b.Text(t, ".set .checkpoint"); !strings.Contains(cp, web.FormatTime(set.Checkpoint.Until)) {
		t.Errorf("checkpoint on the page %q, want %s", cp, web.FormatTime(set.Checkpoint.Until))
	}
	if lag := b.Text(t, ".set .lag"); !strings.Contains(lag, "caught up") {
		t.Errorf("lag %q", lag)
	}
	if f := b.Text(t, ".set .follow"); !strings.Contains(f, "by notification") {
		t.Errorf("follow %q", f)
	}
	if l := b.Text(t, ".set .lease"); !strings.Contains(l, "expires "+web.FormatTime(set.Expires)) {
		t.Errorf("lease %q, want %s", l, web.FormatTime(set.Expires))
	}
	rows := strings.Join(b.Texts(t, "#changes-table tbody tr"), "\n")
	for _, want := range []string{"updated f1.txt", "created new0.txt", "deleted f0.txt", "created new1.txt", "created clash.txt", "created new2.txt"} {
		if !regexp.MustCompile(strings.ReplaceAll(regexp.QuoteMeta(want), " ", `\s*`)).MatchString(rows) {
			t.Errorf("changes table lacks %q:\n%s", want, rows)
		}
	}
	if hrefs := b.Attrs(t, "#changes-table tbody a", "href"); len(hrefs) == 0 || !strings.HasPrefix(hrefs[0], base) {
		t.Errorf("change links %v", hrefs)
	}
	if f := b.Text(t, "#failures-table"); !strings.Contains(f, "not overwritten") {
		t.Errorf("failures: %q", f)
	}
	if n := b.Text(t, "#t-fetched"); n == "0" {
		t.Errorf("fetched total %q", n)
	}
	// The chart: the current minute's bar has a height.
	bars := browsertest.Eval[int](t, b, `[...document.querySelectorAll("#chart-files rect.bar")].filter(r => r.getAttribute("height") > 0).length`)
	all := browsertest.Eval[int](t, b, `document.querySelectorAll("#chart-files rect.bar").length`)
	if bars == 0 || all != status.Minutes {
		t.Errorf("files chart: %d bars of %d with a height", bars, all)
	}
	if d := b.Text(t, "#chart-bytes figcaption"); !strings.Contains(d, "in the last hour") {
		t.Errorf("bytes chart caption %q", d)
	}
	b.Screenshot(t, "mirror")
	b.Phone(t)
	b.Navigate(t, statusURL)
	if w := browsertest.Eval[int](t, b, `document.documentElement.scrollWidth`); w > 400 {
		t.Errorf("the page is %d px wide on a 390 px phone", w)
	}
	b.Screenshot(t, "mirror-phone")
	b.Desktop(t)
	b.AssertSameOrigin(t, strings.TrimSuffix(statusURL, "/"))

	// Stopping writes the report.
	if code := stopFollow(); code != 0 {
		t.Errorf("follow exit %d:\n%s", code, fout)
	}
	rb, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("report: %v\n%s", err, fout)
	}
	if strings.Contains(string(rb), "<script") || strings.Contains(string(rb), "http-equiv=\"refresh\"") {
		t.Error("the report has a script or a refresh")
	}
	// browsertest opens loopback http only: the report is served as a
	// file would be read, with the views' headers.
	rs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		web.SetHeaders(w.Header())
		w.Write(rb)
	}))
	defer rs.Close()
	b2 := browsertest.New(t)
	b2.Navigate(t, rs.URL+"/mirror.html")
	// The report is of the end: the checkpoint is the last one shown live
	// or a later one (a poll's catch-up may have advanced it since).
	if cp := b2.Text(t, ".set .checkpoint"); !strings.Contains(cp, "changes applied up to") {
		t.Errorf("report checkpoint %q", cp)
	} else if m := regexp.MustCompile(`up to (\S+ \S+Z)`).FindStringSubmatch(cp); m == nil || m[1] < web.FormatTime(set.Checkpoint.Until) {
		t.Errorf("report checkpoint %q, live %s", cp, web.FormatTime(set.Checkpoint.Until))
	}
	rows = strings.Join(b2.Texts(t, "#changes-table tbody tr"), "\n")
	if !strings.Contains(rows, "new2.txt") || !strings.Contains(b2.Text(t, "#failures-table"), "not overwritten") {
		t.Errorf("report rows:\n%s", rows)
	}
	if f := b2.Text(t, ".set .follow"); !strings.Contains(f, "following stopped") {
		t.Errorf("report: changes arrive %q", f)
	}
	if n := browsertest.Eval[int](t, b2, `document.querySelectorAll("svg.chart").length`); n != 2 {
		t.Errorf("report has %d charts", n)
	}
	b2.Screenshot(t, "mirror-report")
	b2.AssertSameOrigin(t, rs.URL)
}

func runCmd(t *testing.T, args ...string) (int, string) {
	code, out, errs := runCLI(t, args...)
	return code, out + errs
}

// TestSyncReport: a one-off sync --report writes the report (atomically:
// nothing else is left in its directory) and --status-addr with a bad
// address is a usage error.
func TestSyncReport(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	for i := range 3 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("r%d.txt", i)), []byte(fmt.Sprint("r", i)), 0o644)
	}
	base, _ := serveDir(t, dir)
	out := t.TempDir()
	report := filepath.Join(out, "r.html")
	dest := t.TempDir()
	code, o := runCmd(t, "sync", "--report", report, base, dest)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, o)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"r0.txt", "r2.txt", "caught up", `<svg class="chart"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if ents, _ := os.ReadDir(out); len(ents) != 1 {
		t.Errorf("report directory: %v", ents)
	}
	// An audit writes one too, with its counts.
	if code, o := runCmd(t, "sync", "--audit", "--report", report, base, dest); code != 0 {
		t.Fatalf("audit exit %d:\n%s", code, o)
	}
	if b, _ := os.ReadFile(report); !strings.Contains(string(b), "in-sync 3") {
		t.Errorf("audit report lacks the counts")
	}
	if code, o := runCmd(t, "sync", "--report", filepath.Join(out, "no", "r.html"), base, dest); code != exitUsage {
		t.Errorf("report in a missing directory: exit %d\n%s", code, o)
	}
	if code, o := runCmd(t, "sync", "--status-addr", "127.0.0.1:notaport", base, dest); code != exitUsage {
		t.Errorf("bad --status-addr: exit %d\n%s", code, o)
	}
	// A one-off sync serves the page while it runs; --json stays JSON on
	// stdout (the address goes to stderr).
	code, stdout, stderr := runCLI(t, "sync", "--json", "--status-addr", "127.0.0.1:0", base, dest)
	if code != 0 || !strings.Contains(stderr, "status page: http://127.0.0.1:") || strings.Contains(stdout, "status page") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("not JSON: %s", line)
		}
	}
}

// TestStatusAddrRefusesForeignHost: the status page on loopback answers
// to loopback Hosts only (a rebound DNS name is refused), IPv6 included.
func TestStatusAddrRefusesForeignHost(t *testing.T) {
	h := httpserver.LoopbackHosts(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	for host, want := range map[string]int{"127.0.0.1:8080": 200, "localhost:8080": 200, "[::1]:8080": 200, "[::1]": 200, "LOCALHOST": 200, "a.localhost:1": 200,
		"rebind.evil.example:8080": http.StatusMisdirectedRequest, "evil.example": http.StatusMisdirectedRequest, "": http.StatusMisdirectedRequest,
		"127.0.0.1.evil.example": http.StatusMisdirectedRequest, "0.0.0.0:8080": http.StatusMisdirectedRequest} {
		r := httptest.NewRequest("GET", "/status.json", nil)
		r.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Errorf("Host %q: %d, want %d", host, rec.Code, want)
		}
	}
}
