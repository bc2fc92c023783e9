package browsertest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The harness itself: a click navigates, text is read, and a page that
// asks for something elsewhere has that request refused (never sent) and
// reported.
func TestHarness(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/":
			fmt.Fprint(w, `<!doctype html><title>a</title><p id=p>start</p><a id=next href="/next">next</a><a class=x href="/1">one</a><a class=x href="/2">two</a>`)
		case "/next":
			fmt.Fprint(w, `<!doctype html><title>b</title><p id=p>arrived</p><img src="http://192.0.2.1/pixel.png" alt="">`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	b := New(t)
	b.Navigate(t, srv.URL+"/")
	if got := b.Texts(t, "a.x"); strings.Join(got, ",") != "one,two" {
		t.Fatalf("Texts = %q", got)
	}
	if got := b.Attrs(t, "a.x", "href"); len(got) != 2 || got[0] != srv.URL+"/1" {
		t.Fatalf("Attrs = %q", got)
	}
	b.Click(t, "#next")
	if got := b.Text(t, "#p"); got != "arrived" {
		t.Fatalf("after the click: %q at %s", got, b.Location(t))
	}
	b.Screenshot(t, "harness")
	ft := &fakeT{TB: t}
	b.AssertSameOrigin(ft, srv.URL)
	if !strings.Contains(strings.Join(ft.errs, "\n"), "http://192.0.2.1/pixel.png") {
		t.Fatalf("the request elsewhere was not reported: %q (requests %q)", ft.errs, b.Requests())
	}
}

type fakeT struct {
	testing.TB
	errs []string
}

func (f *fakeT) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *fakeT) Helper() {}
