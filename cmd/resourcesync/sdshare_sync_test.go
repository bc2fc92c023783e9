package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/memstore"
)

// keptStore is a store the command may Close without ending it, so one
// test can look at it after the command and run the command again.
type keptStore struct{ graphstore.Store }

func (keptStore) Close() error { return nil }

// useTestStores makes the sdshare commands use s and the loopback-only
// HTTP client.
func useTestStores(t *testing.T, s graphstore.Store) {
	oldOpen, oldHC := sdshareStoreOpener, sdshareHTTPClient
	t.Cleanup(func() { sdshareStoreOpener, sdshareHTTPClient = oldOpen, oldHC })
	sdshareStoreOpener = func(context.Context, sdshareStoreSpec) (graphstore.Store, error) { return keptStore{s}, nil }
	hc, _ := testnet.Client(t)
	sdshareHTTPClient = func(time.Duration) *http.Client { return hc }
}

// miniSDShare serves one collection: a snapshot and a fragments feed the
// test can change.
type miniSDShare struct {
	srv       *httptest.Server
	mu        sync.Mutex
	fragments string // entries of the fragments feed
}

func atomFeed(entries string) string {
	return `<feed xmlns="http://www.w3.org/2005/Atom" xmlns:sdshare="http://www.sdshare.org/2012/core/"><id>urn:x</id><title>x</title><updated>2020-01-01T00:00:00Z</updated><author><name>x</name></author>` + entries + `</feed>`
}

func atomEntry(updated, resource, rel, href string) string {
	r := ""
	if resource != "" {
		r = "<sdshare:resource>" + resource + "</sdshare:resource>"
	}
	return fmt.Sprintf(`<entry><id>urn:%s</id><title>e</title><updated>%s</updated>%s<link rel="%s" type="application/n-triples" href="%s"/></entry>`, href, updated, r, rel, href)
}

func newMiniSDShare(t *testing.T) *miniSDShare {
	m := &miniSDShare{}
	const ns = "http://www.sdshare.org/2012/core/"
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.mu.Lock()
		frags := m.fragments
		m.mu.Unlock()
		atom := func(s string) {
			w.Header().Set("Content-Type", "application/atom+xml")
			w.Write([]byte(s))
		}
		switch r.URL.Path {
		case "/":
			atom(atomFeed(atomEntry("2020-01-01T00:00:00Z", "", ns+"collectionfeed", "/c")))
		case "/c":
			atom(atomFeed(atomEntry("2020-01-01T00:00:00Z", "", ns+"snapshotsfeed", "/s") + atomEntry("2020-01-01T00:00:00Z", "", ns+"fragmentsfeed", "/f")))
		case "/s":
			atom(atomFeed(atomEntry("2020-06-01T00:00:00Z", "", ns+"snapshot", "/snap")))
		case "/f":
			atom(atomFeed(frags))
		case "/snap":
			w.Header().Set("Content-Type", "application/n-triples")
			w.Write([]byte("<http://x/a> <http://x/p> \"0\" .\n<http://x/b> <http://x/p> _:n .\n_:n <http://x/q> \"n\" .\n"))
		case "/frag/a":
			w.Header().Set("Content-Type", "application/n-triples")
			w.Write([]byte("<http://x/a> <http://x/p> \"1\" .\n"))
		case "/frag/b":
			w.Header().Set("Content-Type", "application/n-triples")
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *miniSDShare) setFragments(s string) {
	m.mu.Lock()
	m.fragments = s
	m.mu.Unlock()
}

func TestSDShareSyncCommand(t *testing.T) {
	s := memstore.New()
	defer s.Close()
	useTestStores(t, s)
	m := newMiniSDShare(t)
	state := t.TempDir()
	const ns = "http://www.sdshare.org/2012/core/"

	code, out, errOut := runCLI(t, "sdshare", "sync", "--state", state, "--graph", m.srv.URL+"/c=http://x/graph", m.srv.URL+"/")
	if code != 0 || !strings.Contains(errOut, "snapshot loaded, 3 triples") || !strings.Contains(errOut, "in step: graph <http://x/graph>") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	// b deleted, a changed, and one broken entry (two resources): exit 1,
	// the good ones applied.
	m.setFragments(atomEntry("2020-06-02T00:00:00Z", "http://x/a", ns+"fragment", "/frag/a") +
		atomEntry("2020-06-03T00:00:00Z", "http://x/b", ns+"fragment", "/frag/b") +
		strings.Replace(atomEntry("2020-06-04T00:00:00Z", "http://x/a", ns+"fragment", "/frag/a"), "</sdshare:resource>", "</sdshare:resource><sdshare:resource>http://x/b</sdshare:resource>", 1))
	code, out, errOut = runCLI(t, "sdshare", "sync", "--state", state, "--graph", m.srv.URL+"/c=http://x/graph", "--json", m.srv.URL+"/")
	if code != 1 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum struct {
		Event  string
		OK     bool
		Report struct {
			Collections []struct {
				Applied, Deleted int
				T                time.Time
				Failures         []struct{ Error string }
			}
		}
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil {
		t.Fatal(err)
	}
	c := sum.Report.Collections[0]
	if sum.Event != "summary" || sum.OK || c.Applied != 2 || c.Deleted != 1 || len(c.Failures) != 1 || !c.T.Equal(time.Date(2020, 6, 4, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("summary %+v", sum)
	}
	var got []string
	for tr, err := range s.Triples(context.Background(), "http://x/graph") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, tr.S.Value+" "+tr.O.Value)
	}
	if strings.Join(got, ",") != "http://x/a 1" {
		t.Errorf("graph %v", got)
	}
}

func TestSDShareSyncUsage(t *testing.T) {
	s := memstore.New()
	defer s.Close()
	useTestStores(t, s)
	m := newMiniSDShare(t)
	state := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no url", []string{}, 2, "needs OVERVIEW_URL"},
		{"bad graph", []string{"--graph", "x", m.srv.URL + "/"}, 2, "KEY=IRI"},
		{"store and sparql", []string{"--store", t.TempDir(), "--sparql-update", "http://127.0.0.1:1/", m.srv.URL + "/"}, 2, "exclude"},
		{"query without update", []string{"--sparql-query", "http://127.0.0.1:1/", m.srv.URL + "/"}, 2, "go with"},
		{"overview missing", []string{m.srv.URL + "/nothing"}, 2, "discovery failed"},
		{"help", []string{"--help"}, 0, "Exit status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"sdshare", "sync", "--state", filepath.Join(state, tc.name)}, tc.args...)
			code, out, errOut := runCLI(t, args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d, want %d with %q\nstdout %s\nstderr %s", code, tc.code, tc.want, out, errOut)
			}
		})
	}
}
