package aggstatus

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/resourcesync-go/resourcesync/aggregate"
)

// FuzzRoutes: whatever the path and query, the handler answers one of
// its statuses, and Detail is only ever asked for an id the Snapshot
// lists.
func FuzzRoutes(f *testing.F) {
	for _, s := range []string{"/", "/?sort=lag", "/status.json?sort=x", "/metrics", "/source/libraries%2Funi-a/status.json",
		"/source/..%2F/", "/source/libraries/uni-a/", "/source/repo", "/source/%2e%2e/", "//source/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		u, err := url.ParseRequestURI(target)
		if err != nil || u.Host != "" || u.Scheme != "" {
			return
		}
		h := Handler(Options{Snapshot: fixture, Detail: func(id string) http.Handler {
			if !listed(fixture(), id) {
				t.Fatalf("Detail asked for %q", id)
			}
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
		}})
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL = u
		req.RequestURI = target
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		switch w.Code {
		case 200, 301, 400, 404:
		default:
			t.Fatalf("%q: %d", target, w.Code)
		}
	})
}

// FuzzOutputs: whatever text a Source's fields hold, the page, the JSON
// and the metrics are made, valid UTF-8, and hold no markup from it.
func FuzzOutputs(f *testing.F) {
	f.Add("libraries/uni-a", "https://u:p@x.example/", "<script>alert(1)</script>", "hostile")
	f.Add("a\xffb", "\x00", strings.Repeat("é", 3000), "\"\\\n")
	f.Fuzz(func(t *testing.T, id, u, msg, reason string) {
		s := fixture()
		s.Sources = append(s.Sources, aggregate.SourceStatus{ID: id, URL: u, LastError: msg, Reason: reason, Kind: reason, State: msg, Node: id, Failures: 1})
		s = Sanitize(s)
		if err := Sort(s.Sources, SortErrors); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := writeHTML(&b, s, SortErrors, true, true); err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(b.Bytes()) || bytes.Contains(b.Bytes(), []byte("<script")) {
			t.Fatalf("page: valid %v", utf8.Valid(b.Bytes()))
		}
		if _, err := json.Marshal(s); err != nil {
			t.Fatal(err)
		}
		for _, x := range s.Sources {
			if len(x.ID) > 2*len("…")+4096 || len(x.LastError) > 4096 {
				t.Fatalf("not bounded: %d %d", len(x.ID), len(x.LastError))
			}
		}
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(NewCollector(func() aggregate.Snapshot { return s }))
		if _, err := reg.Gather(); err != nil {
			t.Fatalf("metrics: %v", err)
		}
	})
}
