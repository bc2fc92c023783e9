package validate

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

// loopbackClient returns a client that can only reach 127.0.0.0/8; any
// other address fails the test (tests must never leave the machine).
func loopbackClient(t *testing.T) *http.Client {
	t.Helper()
	var mu sync.Mutex
	d := &net.Dialer{Timeout: 5 * time.Second}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			ip := net.ParseIP(host)
			if ip == nil || !ip.IsLoopback() || ip.To4() == nil {
				mu.Lock()
				t.Errorf("refused dial to non-loopback address %s", addr)
				mu.Unlock()
				return nil, errors.New("test client: only 127.0.0.0/8 may be dialled")
			}
			return d.DialContext(ctx, network, addr)
		},
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// treeServer serves testdata/tree with {{BASE}} replaced by its own URL.
// edits change files by path: a nil func removes the file.
func treeServer(t *testing.T, edits map[string]func(string) string) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := strings.TrimPrefix(r.URL.Path, "/")
		edit, edited := edits[p]
		if edited && edit == nil {
			http.NotFound(w, r)
			return
		}
		b, err := os.ReadFile(filepath.Join("testdata", "tree", filepath.FromSlash(p)))
		if err != nil || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		s := strings.ReplaceAll(string(b), "{{BASE}}", srv.URL)
		if edited {
			s = strings.ReplaceAll(edit(s), "{{SELF}}", srv.URL)
		}
		w.Header().Set("Content-Type", "application/xml")
		w.Write([]byte(s))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func replace(old, new string) func(string) string {
	return func(s string) string { return strings.Replace(s, old, new, 1) }
}

func TestWalk(t *testing.T) {
	tests := []struct {
		name      string
		start     string // path on the server
		edits     map[string]func(string) string
		wantDocs  int
		wantRules map[string]rs.Severity // rule → severity that must appear
		clean     bool                   // no problem at all
	}{
		{name: "good tree from base URL", start: "/", wantDocs: 13, clean: true},
		{name: "good tree from capability list", start: "/dataset1/capabilitylist.xml", wantDocs: 12, clean: true},
		{
			name:  "wrong up",
			start: "/.well-known/resourcesync",
			edits: map[string]func(string) string{
				"dataset1/resourcedump.xml": replace("/dataset1/capabilitylist.xml", "/other/capabilitylist.xml"),
			},
			wantDocs:  13,
			wantRules: map[string]rs.Severity{"RS-REL-1": rs.SevWarning},
		},
		{
			name:  "gap between change lists",
			start: "/",
			edits: map[string]func(string) string{
				"dataset1/changelist-2.xml": replace(`from="2013-01-02T00:00:00Z"`, `from="2013-01-02T06:00:00Z"`),
			},
			wantDocs:  13,
			wantRules: map[string]rs.Severity{"RS-DEST-3": rs.SevError, "RS-CHLI-3": rs.SevError},
		},
		{
			name:  "capability mismatch",
			start: "/",
			edits: map[string]func(string) string{
				"dataset1/resourcedump.xml": replace(`capability="resourcedump"`, `capability="resourcelist"`),
			},
			wantDocs:  13,
			wantRules: map[string]rs.Severity{"RS-GEN-3": rs.SevError},
		},
		{
			name:  "document listed twice is fetched once",
			start: "/",
			edits: map[string]func(string) string{
				"dataset1/capabilitylist.xml": replace("</urlset>", "<url><loc>"+"{{SELF}}/dataset1/resourcedump.xml</loc><rs:md capability=\"resourcedump\"/></url></urlset>"),
			},
			wantDocs:  13,
			wantRules: map[string]rs.Severity{"RS-CAP-2": rs.SevError},
		},
		{
			name:      "missing document",
			start:     "/",
			edits:     map[string]func(string) string{"dataset1/changelist-3.xml": nil},
			wantDocs:  12,
			wantRules: map[string]rs.Severity{"RS-FETCH": rs.SevError},
		},
		{
			name:  "component without index link",
			start: "/",
			edits: map[string]func(string) string{
				"dataset1/resourcelist-part2.xml": replace(`rel="index"`, `rel="describedby"`),
			},
			wantDocs:  13,
			wantRules: map[string]rs.Severity{"RS-REL-2": rs.SevWarning},
		},
		{
			name:  "component naming another index",
			start: "/",
			edits: map[string]func(string) string{
				"dataset1/resourcelist-part2.xml": replace(`/dataset1/resourcelist-index.xml"`, `/dataset1/resourcelist-other.xml"`),
			},
			wantDocs:  13,
			wantRules: map[string]rs.Severity{"RS-REL-2": rs.SevWarning},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := treeServer(t, tc.edits)
			var mu sync.Mutex
			var probs []Problem
			sum, err := Walk(context.Background(), loopbackClient(t), srv.URL+tc.start, Options{}, func(p Problem) {
				mu.Lock()
				probs = append(probs, p)
				mu.Unlock()
			})
			if err != nil {
				t.Fatalf("Walk: %v", err)
			}
			if sum.Documents != tc.wantDocs {
				t.Errorf("documents = %d, want %d", sum.Documents, tc.wantDocs)
			}
			for _, p := range probs {
				t.Log(p)
			}
			if tc.clean && len(probs) > 0 {
				t.Errorf("good tree has problems: %v", probs)
			}
			for rule, sev := range tc.wantRules {
				found := false
				for _, p := range probs {
					found = found || p.Rule == rule && p.Severity == sev
				}
				if !found {
					t.Errorf("no %s %s among %v", sev, rule, probs)
				}
			}
			errs := 0
			for _, p := range probs {
				if p.Severity == rs.SevError {
					errs++
				}
			}
			if errs != sum.Errors {
				t.Errorf("summary counts %d errors, reported %d", sum.Errors, errs)
			}
		})
	}
}

func TestWalkNoSource(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := Walk(context.Background(), loopbackClient(t), srv.URL+"/base/", Options{}, func(Problem) {})
	if !errors.Is(err, ErrNoSource) {
		t.Fatalf("err = %v, want ErrNoSource", err)
	}
}

func TestWalkMaxDocs(t *testing.T) {
	srv := treeServer(t, nil)
	sum, err := Walk(context.Background(), loopbackClient(t), srv.URL+"/", Options{MaxDocs: 3}, func(Problem) {})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Documents != 3 || sum.Skipped == 0 {
		t.Fatalf("documents %d skipped %d, want 3 and some", sum.Documents, sum.Skipped)
	}
}

func TestCandidates(t *testing.T) {
	got := candidates("http://h/a/b/")
	want := []string{"http://h/a/b/", "http://h/a/b/.well-known/resourcesync", "http://h/.well-known/resourcesync"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("candidates = %v, want %v", got, want)
	}
	if got := candidates("http://h/x/capabilitylist.xml"); len(got) != 1 {
		t.Errorf("candidates of a .xml = %v", got)
	}
}

// TestWalkDiscovery: a base URL serving an HTML home page is not the end of
// the walk: the Link header, the well-known URL and robots.txt are tried.
func TestWalkDiscovery(t *testing.T) {
	const home = "<!DOCTYPE html>\n<html><head><title>Home</title></head><body>hello</body></html>\n"
	sd, err := os.ReadFile(filepath.Join("testdata", "tree", ".well-known", "resourcesync"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		link      string // Link header on the home page
		wellKnown bool   // /.well-known/resourcesync served
		robots    string // robots.txt body, "" for 404
		wantStart string // path of the start document, "" for ErrNoSource
	}{
		{name: "well-known after an HTML home page", wellKnown: true, wantStart: "/.well-known/resourcesync"},
		{name: "Link header", link: `</style.css>; rel="stylesheet", </sd.xml>; rel="resourcesync"`, wantStart: "/sd.xml"},
		{name: "robots.txt", robots: "User-agent: *\nDisallow:\nSitemap: /sd.xml\n", wantStart: "/sd.xml"},
		{name: "nothing", robots: "User-agent: *\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tree := treeServer(t, nil)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/":
					if tc.link != "" {
						w.Header().Set("Link", tc.link)
					}
					w.Header().Set("Content-Type", "text/html; charset=utf-8")
					w.Write([]byte(home))
				case "/sd.xml", "/.well-known/resourcesync":
					if r.URL.Path == "/sd.xml" && tc.wellKnown || r.URL.Path != "/sd.xml" && !tc.wellKnown {
						http.NotFound(w, r)
						return
					}
					w.Header().Set("Content-Type", "application/xml")
					w.Write([]byte(strings.ReplaceAll(string(sd), "{{BASE}}", tree.URL)))
				case "/robots.txt":
					if tc.robots == "" {
						http.NotFound(w, r)
						return
					}
					w.Write([]byte(tc.robots))
				default:
					http.NotFound(w, r)
				}
			}))
			defer srv.Close()
			sum, err := Walk(context.Background(), loopbackClient(t), srv.URL+"/", Options{}, func(Problem) {})
			if tc.wantStart == "" {
				if !errors.Is(err, ErrNoSource) || !strings.Contains(err.Error(), "an HTML page") {
					t.Fatalf("err = %v, want ErrNoSource naming the HTML page", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Walk: %v", err)
			}
			if sum.Start != srv.URL+tc.wantStart || sum.Documents < 10 {
				t.Errorf("started at %s with %d documents, want %s and the whole tree", sum.Start, sum.Documents, srv.URL+tc.wantStart)
			}
		})
	}
}
