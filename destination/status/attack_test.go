package status

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/testing/browsertest"
	"github.com/resourcesync-go/resourcesync/internal/web"
)

// hostileReport writes a report of a hostile Source: markup, script URLs
// and credentials in every field it controls.
func hostileReport(t *testing.T) (string, string) {
	t.Helper()
	r := New(Options{Source: "http://u:PASSWORD@src.example/<script>alert(1)</script>", Dest: "/d/\"><svg onload=alert(1)>"})
	r.SetBase(`http://src.example/"><img src=x onerror=alert(1)>`)
	r.Handle(destination.Event{Kind: destination.EventPhase, Message: `<img src=x onerror=alert(1)>`})
	r.Handle(destination.Event{Kind: destination.EventFetched, Set: `"><svg onload=alert(1)>`, Change: `updated"><b>x</b>`, Path: `<script>alert(1)</script>`, URI: "javascript:alert(1)", Bytes: 5})
	r.Handle(destination.Event{Kind: destination.EventFetched, Set: "s", Path: "b", URI: " JaVaScRiPt:alert(1)", Bytes: 5})
	r.Handle(destination.Event{Kind: destination.EventFetched, Set: "s", Path: "c", URI: "data:text/html,<script>alert(1)</script>", Bytes: 5})
	r.Handle(destination.Event{Kind: destination.EventFailed, Set: "s", URI: "http://src.example/x", Error: `Get "http://u:PASSWORD@src.example/x": <script>alert(1)</script>`})
	r.Handle(destination.Event{Kind: destination.EventDone, Set: "s", Message: `<script>alert(1)</script>`})
	p := filepath.Join(t.TempDir(), "report.html")
	if err := r.WriteReport(p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, string(b)
}

// TestReportHostileSource: nothing a Source sends becomes markup or a
// script link in the report, and the report, read from disk where no
// header comes with it, carries the CSP in a meta element before
// anything it would govern.
func TestReportHostileSource(t *testing.T) {
	_, page := hostileReport(t)
	for _, bad := range []string{"<script", "<svg onload", "<img src=x", "javascript:", "JaVaScRiPt:", `href="data:`, "PASSWORD", "<b>x</b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the report contains %q", bad)
		}
	}
	meta := `<meta http-equiv="Content-Security-Policy" content="` + web.MetaCSP + `">`
	i := strings.Index(page, meta)
	if i < 0 || i > strings.Index(page, "<title>") || i > strings.Index(page, "<style>") {
		t.Errorf("no CSP meta element before the title and style")
	}
}

// TestReportCSPInBrowser: opened from file:// in Chromium, the report is
// styled (the meta CSP admits its stylesheet) and, were markup ever to
// get into it, the CSP would stop a script and a request elsewhere.
func TestReportCSPInBrowser(t *testing.T) {
	browsertest.Skip(t)
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	p, page := hostileReport(t)
	// A template bug, simulated: markup injected after the head.
	page = strings.Replace(page, "<main", `<img id="inj" src="`+srv.URL+`/leak"><script>document.title="pwned"</script><main`, 1)
	if err := os.WriteFile(p, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	b := browsertest.New(t)
	b.Navigate(t, "file://"+p)
	if title := browsertest.Eval[string](t, b, "document.title"); title != "Mirror status" {
		t.Errorf("title %q: the injected script ran", title)
	}
	if pos := browsertest.Eval[string](t, b, "getComputedStyle(document.querySelector('a.skip')).position"); pos != "absolute" {
		t.Errorf("skip link position %q: the stylesheet was not applied", pos)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the injected image was fetched (%d requests)", n)
	}
}

// TestLongTextsClipped: a hostile Source's megabyte-long URLs and the
// errors quoting them do not make pages of a hundred megabytes.
func TestLongTextsClipped(t *testing.T) {
	r := New(Options{Source: "http://src.example/"})
	long := "http://src.example/" + strings.Repeat("é", 1<<19)
	for range 100 {
		r.Handle(destination.Event{Kind: destination.EventFetched, Set: "s", URI: long, Path: long[19:], Bytes: 1})
		r.Handle(destination.Event{Kind: destination.EventFailed, Set: "s", URI: long, Path: long[19:], Error: "GET " + long + ": refused"})
		r.Handle(destination.Event{Kind: destination.EventPhase, Message: "baseline from " + long})
	}
	r.Handle(destination.Event{Kind: destination.EventDone, Set: "s", Message: long})
	var b strings.Builder
	if err := WriteHTML(&b, r.Snapshot(), true); err != nil {
		t.Fatal(err)
	}
	if b.Len() > 2<<20 || !utf8.ValidString(b.String()) {
		t.Errorf("a page of %d bytes (valid UTF-8: %v)", b.Len(), utf8.ValidString(b.String()))
	}
	// A password is removed before the text is cut.
	r.Handle(destination.Event{Kind: destination.EventFailed, Set: "s", URI: "http://u:PASSWORD@src.example/x", Error: strings.Repeat("x", MaxText-20) + " http://u:PASSWORD@src.example/x"})
	if s := r.Snapshot(); strings.Contains(s.Failures[0].Error, "PASSWORD") || strings.Contains(s.Failures[0].URI, "PASSWORD") {
		t.Errorf("a password kept: %q", s.Failures[0].Error[MaxText-40:])
	}
}
