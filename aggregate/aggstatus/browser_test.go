package aggstatus

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/resourcesync-go/resourcesync/destination/status"
	"github.com/resourcesync-go/resourcesync/internal/testing/browsertest"
	"github.com/resourcesync-go/resourcesync/internal/web"
)

// console collects what a page reports to the console: errors and
// warnings of the browser (CSP violations, failed loads) and of script.
type console struct {
	mu   sync.Mutex
	msgs []string
}

func (c *console) listen(t *testing.T, b *browsertest.Browser) {
	t.Helper()
	if err := chromedp.Listen(b.Context(), func(ev any) {
		var m string
		switch e := ev.(type) {
		case *cdplog.EventEntryAdded:
			// The browser's own request for /favicon.ico (not the
			// page's) is not found: no view of the toolkit has one.
			if (e.Entry.Level == cdplog.EntryLevelError || e.Entry.Level == cdplog.EntryLevelWarning) && !strings.HasSuffix(e.Entry.URL, "/favicon.ico") {
				m = fmt.Sprintf("%s %s: %s (%s)", e.Entry.Source, e.Entry.Level, e.Entry.Text, e.Entry.URL)
			}
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				m = "console." + string(e.Type)
			}
		case *runtime.EventExceptionThrown:
			m = "exception: " + e.ExceptionDetails.Text
		}
		if m != "" {
			c.mu.Lock()
			c.msgs = append(c.msgs, m)
			c.mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
}

func (c *console) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.msgs
	c.msgs = nil
	return m
}

// TestBrowserSort: the page from a real loopback server in Chromium, the
// Sources in the default order (errors), then by lag after clicking the
// Lag column's link (no script: the server sorts), a Source's own page
// (a destination/status Recorder) reached by its link with an escaped
// slash in its id, nothing loaded from elsewhere and nothing on the
// console, no CSP violation. A page with an inline script, under the
// same CSP, shows that a violation would be seen.
func TestBrowserSort(t *testing.T) {
	b := browsertest.New(t)
	var cons console
	cons.listen(t, b)
	rec := status.New(status.Options{Source: "https://uni-a.example/", Dest: "/srv/mirror/uni-a"})
	mux := http.NewServeMux()
	mux.Handle("/", Handler(Options{Snapshot: hostile, Detail: func(id string) http.Handler {
		if id == "libraries/uni-a" {
			return rec.Handler()
		}
		return nil
	}}))
	mux.HandleFunc("/canary", func(w http.ResponseWriter, r *http.Request) {
		web.SetHeaders(w.Header())
		io.WriteString(w, `<!doctype html><title>canary</title><script>document.title="ran"</script>`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	rows := func() []string { return b.Attrs(t, "#sources-table tbody tr", "data-source") }
	evil := `evil/"><svg onload=alert(1)>`
	b.Navigate(t, srv.URL+"/")
	if title := browsertest.Eval[string](t, b, "document.title"); title != "Aggregator status" {
		t.Fatalf("title %q", title)
	}
	if got, want := rows(), []string{"b", "journals/x", evil, "repo", "catalogue", "libraries/uni-a"}; !slices.Equal(got, want) {
		t.Errorf("default order %q, want %q", got, want)
	}
	if n := browsertest.Eval[int](t, b, `document.querySelectorAll("svg, img, script").length`); n != 0 {
		t.Errorf("%d elements injected by a Source's text", n)
	}
	if e := b.Texts(t, "#sources-table tbody tr[data-source^='evil/'] td.error"); len(e) != 1 || !strings.Contains(e[0], "<script>alert('x')</script>") {
		t.Errorf("the hostile error is not shown as text: %.100q", e)
	}

	b.Click(t, "#sort-lag")
	if loc := b.Location(t); loc != srv.URL+"/?sort=lag" {
		t.Errorf("location %s", loc)
	}
	if got, want := rows(), []string{"catalogue", "repo", "libraries/uni-a", "b", evil, "journals/x"}; !slices.Equal(got, want) {
		t.Errorf("by lag %q, want %q", got, want)
	}
	if s := b.Attrs(t, `th[aria-sort] a`, "id"); !slices.Equal(s, []string{"sort-lag"}) {
		t.Errorf("sorted column %v", s)
	}
	if j := b.Attrs(t, `footer a[href*="status.json"]`, "href"); len(j) != 1 || j[0] != srv.URL+"/status.json?sort=lag" {
		t.Errorf("JSON link %v", j)
	}
	b.Screenshot(t, "aggregate-status")

	b.Click(t, `tr[data-source="libraries/uni-a"] td.id a`)
	if loc := b.Location(t); loc != srv.URL+"/source/libraries%2Funi-a/" {
		t.Errorf("the Source's page at %s", loc)
	}
	if title := browsertest.Eval[string](t, b, "document.title"); title != "Mirror status" || !strings.Contains(b.Text(t, "h1"), "uni-a.example") {
		t.Errorf("the Source's page: %q %q", title, b.Text(t, "h1"))
	}
	b.AssertSameOrigin(t, srv.URL)
	if m := cons.take(); len(m) != 0 {
		t.Errorf("console: %q", m)
	}

	// The check above can fail: an inline script under the CSP is
	// reported (and does not run).
	b.Navigate(t, srv.URL+"/canary")
	if title := browsertest.Eval[string](t, b, "document.title"); title != "canary" {
		t.Errorf("the canary's script ran: %q", title)
	}
	deadline := time.Now().Add(10 * time.Second)
	var m []string
	for len(m) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		m = append(m, cons.take()...)
	}
	if !slices.ContainsFunc(m, func(s string) bool { return strings.Contains(s, "Content Security Policy") }) {
		t.Errorf("no CSP violation seen on the canary: %q", m)
	}
}
