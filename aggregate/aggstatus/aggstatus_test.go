package aggstatus

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/resourcesync-go/resourcesync/aggregate"
	"github.com/resourcesync-go/resourcesync/destination/status"
	"github.com/resourcesync-go/resourcesync/internal/web"
)

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// fixture is a Snapshot of five Sources, every order different.
func fixture() aggregate.Snapshot {
	return aggregate.Snapshot{
		Node: "node-1", Store: "postgres://agg:SECRET@db.example/agg", Started: now.Add(-time.Hour), Now: now,
		Workers: 4, Busy: 1,
		Sources: []aggregate.SourceStatus{
			{ID: "libraries/uni-a", URL: "https://uni-a.example/.well-known/resourcesync", Dest: "/srv/mirror/uni-a", Kind: "resourcesync",
				State: aggregate.StateRunning, LastSuccess: now.Add(-5 * time.Minute), Next: now.Add(10 * time.Minute),
				Lag: 10 * time.Minute, LagKnown: true, Runs: 7, Succeeded: 7, Fetched: 120, Deleted: 3, Bytes: 1 << 20, Follow: true, Notifications: true},
			{ID: "journals/x", URL: "https://x.example/", Kind: "resourcesync", State: aggregate.StateBackoff,
				Failures: 3, Reason: aggregate.ReasonHTTP, LastError: "GET https://x.example/: 503", Runs: 3},
			{ID: "repo", URL: "https://repo.example/", Kind: "resourcesync", State: aggregate.StateBackoff, LastSuccess: now.Add(-3 * time.Hour),
				Failures: 1, Reason: aggregate.ReasonUnreachable, Lag: time.Hour, LagKnown: true, Runs: 5, Succeeded: 4, Failed: 2},
			{ID: "catalogue", URL: "https://cat.example/", Kind: "sdshare", State: aggregate.StateScheduled, LastSuccess: now.Add(-time.Hour),
				Lag: 2 * time.Hour, LagKnown: true, Runs: 1, Succeeded: 1, Node: "node-2"},
			{ID: "b", URL: "https://b.example/", Kind: "resourcesync", State: aggregate.StateBackoff,
				Failures: 3, Reason: aggregate.ReasonAuth, Lag: time.Minute, LagKnown: true, Runs: 3},
		},
	}
}

func ids(s []aggregate.SourceStatus) []string {
	var out []string
	for _, x := range s {
		out = append(out, x.ID)
	}
	return out
}

func TestSort(t *testing.T) {
	for _, c := range []struct {
		by   string
		want []string
	}{
		// 3 failures (auth < http-error), 1 failure, then by lag (unknown last).
		{"", []string{"b", "journals/x", "repo", "catalogue", "libraries/uni-a"}},
		{SortErrors, []string{"b", "journals/x", "repo", "catalogue", "libraries/uni-a"}},
		{SortLag, []string{"catalogue", "repo", "libraries/uni-a", "b", "journals/x"}},
		// never succeeded first (by ID), then the oldest success.
		{SortSuccess, []string{"b", "journals/x", "repo", "catalogue", "libraries/uni-a"}},
		{SortName, []string{"b", "catalogue", "journals/x", "libraries/uni-a", "repo"}},
	} {
		s := fixture().Sources
		if err := Sort(s, c.by); err != nil {
			t.Fatal(err)
		}
		if got := ids(s); !slices.Equal(got, c.want) {
			t.Errorf("sort %q: %v, want %v", c.by, got, c.want)
		}
	}
	// Same failures, one with a reason, one without: the reason first.
	s := []aggregate.SourceStatus{{ID: "a", Failures: 1}, {ID: "z", Failures: 1, Reason: aggregate.ReasonError}}
	Sort(s, SortErrors)
	if got := ids(s); !slices.Equal(got, []string{"z", "a"}) {
		t.Errorf("reason not first: %v", got)
	}
	if err := Sort(s, "size"); !errors.Is(err, ErrSort) {
		t.Errorf("unknown order: %v", err)
	}
}

// get fetches path from a server of h and returns the status, headers
// and body.
func get(t *testing.T, srv *httptest.Server, path string) (int, http.Header, string) {
	t.Helper()
	res, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, string(b)
}

func server(t *testing.T, snap func() aggregate.Snapshot, detail func(string) http.Handler) *httptest.Server {
	srv := httptest.NewServer(Handler(Options{Snapshot: snap, Detail: detail}))
	t.Cleanup(srv.Close)
	return srv
}

func TestJSON(t *testing.T) {
	srv := server(t, fixture, nil)
	for _, c := range []struct {
		query string
		code  int
		want  []string
	}{
		{"", 200, []string{"b", "journals/x", "repo", "catalogue", "libraries/uni-a"}},
		{"?sort=lag", 200, []string{"catalogue", "repo", "libraries/uni-a", "b", "journals/x"}},
		{"?sort=name", 200, []string{"b", "catalogue", "journals/x", "libraries/uni-a", "repo"}},
		{"?sort=%3Cscript%3E", 400, nil},
	} {
		code, h, body := get(t, srv, "/status.json"+c.query)
		if code != c.code {
			t.Errorf("%s: %d %s", c.query, code, body)
			continue
		}
		if code != 200 {
			if strings.Contains(body, "<script>") {
				t.Errorf("the error echoes markup: %s", body)
			}
			continue
		}
		if ct := h.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		var s aggregate.Snapshot
		if err := json.Unmarshal([]byte(body), &s); err != nil {
			t.Fatal(err)
		}
		if got := ids(s.Sources); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.query, got, c.want)
		}
		if s.Workers != 4 || s.Busy != 1 || s.Node != "node-1" || strings.Contains(body, "SECRET") || !strings.Contains(s.Store, "db.example") {
			t.Errorf("%s: aggregate-wide fields %+v", c.query, s)
		}
		var a aggregate.SourceStatus
		for _, x := range s.Sources {
			if x.ID == "libraries/uni-a" {
				a = x
			}
		}
		if a.Lag != 10*time.Minute || !a.LagKnown || !a.LastSuccess.Equal(now.Add(-5*time.Minute)) || a.Fetched != 120 || !a.Notifications {
			t.Errorf("%s: a Source's figures %+v", c.query, a)
		}
	}
	// No Source: a list, not null.
	srv = server(t, func() aggregate.Snapshot { return aggregate.Snapshot{Now: now} }, nil)
	if _, _, body := get(t, srv, "/status.json"); !strings.Contains(body, `"sources": []`) {
		t.Errorf("empty: %s", body)
	}
}

// hostile is a Source controlled by an attacker: markup, quotes, a
// password in its URL and error, a megabyte of text, invalid UTF-8.
func hostile() aggregate.Snapshot {
	s := fixture()
	long := strings.Repeat("é", 1<<19)
	s.SourcesError = `line 3: "<script>alert(1)</script>"`
	s.Sources = append(s.Sources, aggregate.SourceStatus{
		ID: `evil/"><svg onload=alert(1)>`, URL: "https://user:PASSWORD@evil.example/<script>alert(1)</script>?token=TOKEN",
		Dest: "/d/\"><img src=x onerror=alert(1)>", Kind: "resourcesync", State: aggregate.StateBackoff,
		Failures: 2, Reason: aggregate.ReasonHostile,
		LastError: "Get \"https://user:PASSWORD@evil.example/x\": <script>alert('x')</script> \xff\xfe" + long,
		Node:      "n\"1\\\n2",
	})
	return s
}

func TestHostileText(t *testing.T) {
	srv := server(t, hostile, func(string) http.Handler { return http.NotFoundHandler() })
	code, h, page := get(t, srv, "/")
	if code != 200 {
		t.Fatalf("%d", code)
	}
	if h.Get("Content-Security-Policy") != web.CSP || h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" {
		t.Errorf("headers %v", h)
	}
	_, _, js := get(t, srv, "/status.json")
	_, _, metrics := get(t, srv, "/metrics")
	for name, out := range map[string]string{"page": page, "json": js, "metrics": metrics} {
		for _, bad := range []string{"PASSWORD", "TOKEN", "SECRET", "\xff"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
		if !utf8.ValidString(out) {
			t.Errorf("%s: invalid UTF-8", name)
		}
		if len(out) > 64<<10 {
			t.Errorf("%s: %d bytes: a Source's long text not bounded", name, len(out))
		}
	}
	for _, bad := range []string{"<script", "<svg onload", "<img src=x", `"><svg`, `"><img`} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q", bad)
		}
	}
	if !strings.Contains(page, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;") {
		t.Errorf("the error text is not shown escaped")
	}
	// The escaped id's link: one path segment.
	if want := `href="source/evil%2F%22%3E%3Csvg%20onload=alert%281%29%3E/"`; !strings.Contains(page, want) {
		t.Errorf("no link %s", want)
	}
	var s aggregate.Snapshot
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatal(err)
	}
	for _, x := range s.Sources {
		if strings.HasPrefix(x.ID, "evil/") && (len(x.LastError) > status.MaxText+len("…") || !strings.Contains(x.LastError, "https://evil.example/x")) {
			t.Errorf("last error %d bytes: %.80q", len(x.LastError), x.LastError)
		}
	}
}

func TestMetrics(t *testing.T) {
	srv := server(t, hostile, nil)
	code, _, body := get(t, srv, "/metrics")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v", err)
	}
	// value returns the family's value for a source ("" for none), and
	// whether it is there.
	value := func(name, source string) (float64, bool) {
		f := fams[name]
		if f == nil {
			return 0, false
		}
		for _, m := range f.Metric {
			var src string
			for _, l := range m.Label {
				if l.GetName() == "source" {
					src = l.GetValue()
				}
			}
			if src != source {
				continue
			}
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue(), true
			case m.Counter != nil:
				return m.Counter.GetValue(), true
			}
		}
		return 0, false
	}
	const p0 = "resourcesync_aggregate_"
	for _, c := range []struct {
		name, source string
		want         float64
		present      bool
	}{
		{p0 + "source_lag_seconds", "libraries/uni-a", 600, true},
		{p0 + "source_lag_seconds", "journals/x", 0, false}, // not known
		{p0 + "source_last_success_timestamp_seconds", "libraries/uni-a", float64(now.Add(-5 * time.Minute).Unix()), true},
		{p0 + "source_last_success_timestamp_seconds", "journals/x", 0, false}, // never
		{p0 + "source_next_run_timestamp_seconds", "libraries/uni-a", float64(now.Add(10 * time.Minute).Unix()), true},
		{p0 + "source_consecutive_failures", "journals/x", 3, true},
		{p0 + "source_runs_total", "repo", 5, true},
		{p0 + "source_runs_succeeded_total", "repo", 4, true},
		{p0 + "source_fetched_total", "libraries/uni-a", 120, true},
		{p0 + "source_deleted_total", "libraries/uni-a", 3, true},
		{p0 + "source_failed_total", "repo", 2, true},
		{p0 + "source_bytes_total", "libraries/uni-a", 1 << 20, true},
		{p0 + "source_up", "libraries/uni-a", 1, true},
		{p0 + "source_up", "repo", 0, true},
		{p0 + "source_up", "journals/x", 0, true},
		{p0 + "source_info", `evil/"><svg onload=alert(1)>`, 1, true},
		{p0 + "workers", "", 4, true},
		{p0 + "busy_workers", "", 1, true},
		{p0 + "sources", "", 6, true},
		{p0 + "sources_file_error", "", 1, true},
	} {
		v, ok := value(c.name, c.source)
		if ok != c.present || v != c.want {
			t.Errorf("%s{source=%q} = %v (present %v), want %v (present %v)", c.name, c.source, v, ok, c.want, c.present)
		}
	}
	if f := fams[p0+"source_runs_total"]; f == nil || f.GetType().String() != "COUNTER" {
		t.Errorf("runs_total is not a counter")
	}
	// The info labels, escaped in the text and read back intact.
	for _, m := range fams[p0+"source_info"].Metric {
		l := map[string]string{}
		for _, x := range m.Label {
			l[x.GetName()] = x.GetValue()
		}
		if l["source"] == "libraries/uni-a" && (l["url"] != "https://uni-a.example/.well-known/resourcesync" || l["kind"] != "resourcesync" || l["state"] != "running" || l["reason"] != "") {
			t.Errorf("info %v", l)
		}
		if strings.HasPrefix(l["source"], "evil/") && (l["reason"] != "hostile" || strings.Contains(l["url"], "PASSWORD") || !strings.HasPrefix(l["url"], "https://evil.example/")) {
			t.Errorf("hostile info %v", l)
		}
	}
	if !strings.Contains(body, `source="evil/\"><svg onload=alert(1)>"`) {
		t.Errorf("the label value is not escaped per the exposition format")
	}
	// A Source listed twice (an engine bug) does not fail the scrape.
	srv = server(t, func() aggregate.Snapshot {
		s := fixture()
		s.Sources = append(s.Sources, s.Sources[0])
		return s
	}, nil)
	if code, _, body := get(t, srv, "/metrics"); code != 200 || strings.Count(body, `resourcesync_aggregate_source_up{source="libraries/uni-a"}`) != 1 {
		t.Errorf("duplicate Source: %d", code)
	}
}

func TestPage(t *testing.T) {
	srv := server(t, fixture, func(string) http.Handler { return http.NotFoundHandler() })
	_, _, page := get(t, srv, "/?sort=lag")
	order := []string{"catalogue", "repo", "libraries/uni-a", "b", "journals/x"}
	last := -1
	for _, id := range order {
		i := strings.Index(page, `<tr data-source="`+id+`">`)
		if i < last {
			t.Errorf("%s out of order (lag)", id)
		}
		last = i
	}
	for _, want := range []string{
		`<meta http-equiv="refresh" content="5">`,
		`<a class="sort" id="sort-lag" href="?sort=lag">`,
		`aria-sort="descending"><a class="sort" id="sort-lag"`,
		`href="source/libraries%2Funi-a/"`,
		`<b id="n-sources" data-value="5">`, `<b id="n-ok" data-value="2"`, `<b id="n-failing" data-value="3"`,
		`<b id="n-running" data-value="1">`, `1 / 4`,
		`href="status.json?sort=lag"`, `href="metrics"`,
		`<span class="good">notifications</span>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if code, _, _ := get(t, srv, "/?sort=size"); code != 400 {
		t.Errorf("unknown sort: %d", code)
	}
	// Without Detail, no link to a page that is not there.
	srv = server(t, fixture, nil)
	if _, _, page := get(t, srv, "/"); strings.Contains(page, `href="source/`) {
		t.Errorf("links to Source pages without Detail")
	}
}

// TestRoutes: the Source pages under /source/<escaped id>/, with the
// prefix stripped; an unknown id, a traversal, an unescaped slash and a
// nil Detail are not found; other paths and methods refused.
func TestRoutes(t *testing.T) {
	rec := status.New(status.Options{Source: "https://uni-a.example/", Now: func() time.Time { return now }})
	var asked []string
	srv := server(t, fixture, func(id string) http.Handler {
		asked = append(asked, id)
		switch id {
		case "libraries/uni-a":
			return rec.Handler()
		case "repo":
			return nil // known, no page (yet)
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, id+" "+r.URL.Path) })
	})
	for _, c := range []struct {
		path string
		code int
		want string
	}{
		{"/source/libraries%2Funi-a/", 200, "Mirror status"},
		{"/source/libraries%2Funi-a/status.json", 200, `"source": "https://uni-a.example/"`},
		{"/source/catalogue/", 200, "catalogue /"},
		{"/source/catalogue/a%2Fb", 200, "catalogue /a/b"},
		{"/source/repo/", 404, ""},
		{"/source/unknown/", 404, ""},
		{"/source/libraries/uni-a/", 404, ""}, // "libraries" is no Source
		{"/source/..%2F..%2Fetc%2Fpasswd/", 404, ""},
		{"/source/libraries%2F..%2Flibraries%2Funi-a/", 404, ""},
		{"/source//", 404, ""},
		{"/source/", 404, ""},
		{"/nothing", 404, ""},
		{"/index.html", 200, "Aggregator status"},
	} {
		code, _, body := get(t, srv, c.path)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %.200q, want %d %q", c.path, code, body, c.code, c.want)
		}
	}
	for _, id := range asked {
		if id != "libraries/uni-a" && id != "catalogue" && id != "repo" {
			t.Errorf("Detail asked for %q, which the Snapshot does not list", id)
		}
	}
	// /source/<id> without its slash: redirected relative to itself.
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(srv.URL + "/source/libraries%2Funi-a")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != "./libraries%2Funi-a/" {
		t.Errorf("redirect %d %q", res.StatusCode, res.Header.Get("Location"))
	}
	res, err = http.Post(srv.URL+"/", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", res.StatusCode)
	}
	// No Detail at all: every Source page is not found.
	srv = server(t, fixture, nil)
	if code, _, _ := get(t, srv, "/source/catalogue/"); code != 404 {
		t.Errorf("nil Detail: %d", code)
	}
}

func TestWriteReport(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "report.html")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteReport(p, hostile()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, bad := range []string{"<script", "PASSWORD", `http-equiv="refresh"`, `class="sort"`, "<img", `href="http`, `href="source/`} {
		if strings.Contains(page, bad) {
			t.Errorf("the report contains %q", bad)
		}
	}
	if !strings.Contains(page, `<meta http-equiv="Content-Security-Policy" content="`+web.MetaCSP+`">`) || !strings.Contains(page, "<style>") {
		t.Errorf("the report is not self-contained with its CSP")
	}
	// Default order: errors.
	if i, j := strings.Index(page, `data-source="b"`), strings.Index(page, `data-source="libraries/uni-a"`); i < 0 || j < i {
		t.Errorf("report order")
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("temporary files left: %v", es)
	}
	if err := WriteReport(filepath.Join(dir, "missing", "r.html"), fixture()); err == nil {
		t.Errorf("no error for a missing directory")
	}
}
