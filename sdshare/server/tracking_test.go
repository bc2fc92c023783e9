package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/source/store"
)

func journal(t *testing.T, c *Collection) []store.Change {
	t.Helper()
	var out []store.Change
	for ch, err := range c.st.Journal(context.Background(), 1) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ch)
	}
	return out
}

func feedResources(e *env) []string {
	var out []string
	for _, en := range e.fragments(e.base + "c/fragments") {
		out = append(out, en.Resources[0])
	}
	return out
}

// TestChangeTracking: edits of the files become fragment entries within
// the reload interval; a rewrite with the same content adds none; a file
// with a syntax error is not loaded and publishes no deletions.
func TestChangeTracking(t *testing.T) {
	e := newEnv(t, map[string]string{
		"a.nt":     "<http://ex/a> <http://ex/p> \"1\" .\n",
		"sub/b.nt": "<http://ex/b> <http://ex/p> \"1\" .\n",
		"skip.txt": "not RDF, not loaded",
	}, nil)
	c := e.coll()
	t.Run("change appears", func(t *testing.T) {
		e.write("a.nt", "<http://ex/a> <http://ex/p> \"2\" .\n")
		waitFor(t, "an entry for a", func() bool { return slices.Equal(feedResources(e), []string{"http://ex/a"}) })
	})
	t.Run("new file in a new directory", func(t *testing.T) {
		e.write("new/dir/c.nt", "<http://ex/c> <http://ex/p> \"1\" .\n")
		waitFor(t, "an entry for c", func() bool { return len(feedResources(e)) == 2 })
		if r := feedResources(e); r[1] != "http://ex/c" {
			t.Errorf("entries %v", r)
		}
	})
	t.Run("unchanged rewrite adds nothing", func(t *testing.T) {
		before := c.reloads.Load()
		n := len(journal(t, c))
		e.write("a.nt", "<http://ex/a> <http://ex/p> \"2\" .\n")
		waitFor(t, "a reload", func() bool { return c.reloads.Load() > before })
		if got := len(journal(t, c)); got != n {
			t.Errorf("journal grew from %d to %d on an unchanged rewrite", n, got)
		}
	})
	t.Run("syntax error publishes no deletions", func(t *testing.T) {
		before := c.reloadErrors.Load()
		n := len(journal(t, c))
		e.write("sub/b.nt", "<http://ex/b> <http://ex/p> \"unterminated .\n")
		waitFor(t, "a failed reload", func() bool { return c.reloadErrors.Load() > before })
		if got := len(journal(t, c)); got != n {
			t.Errorf("journal grew from %d to %d on a syntax error", n, got)
		}
		if _, body := e.get(fragmentURL(e, "http://ex/b")); !strings.Contains(string(body), `"1"`) {
			t.Errorf("b is no longer served: %q", body)
		}
		if _, body := e.get(e.base + "healthz"); !strings.Contains(string(body), "degraded") {
			t.Errorf("healthz does not report the failed reload: %s", body)
		}
		// The line is logged just after the failed load is counted.
		waitFor(t, "a log line naming the file", func() bool {
			return strings.Contains(e.logs.String(), "not valid RDF") && strings.Contains(e.logs.String(), "b.nt")
		})
		e.write("sub/b.nt", "<http://ex/b> <http://ex/p> \"3\" .\n")
		waitFor(t, "recovery", func() bool { return c.LastError() == nil && len(journal(t, c)) == n+1 })
	})
	t.Run("removed file deletes its resources", func(t *testing.T) {
		os.RemoveAll(filepath.Join(e.dir, "new"))
		waitFor(t, "the deletion", func() bool {
			j := journal(t, c)
			return j[len(j)-1].Kind == "deleted" && j[len(j)-1].Path() == "http://ex/c"
		})
		if resp, body := e.get(fragmentURL(e, "http://ex/c")); resp.StatusCode != 200 || len(body) != 0 {
			t.Errorf("deleted c: %s %q", resp.Status, body)
		}
	})
}

// TestSingleFileCollection: PATH may be one file, replaced by rename as
// editors do.
func TestSingleFileCollection(t *testing.T) {
	e := newEnv(t, map[string]string{"one.nt": "<http://ex/a> <http://ex/p> \"1\" .\n"}, func(c *Config) {
		c.Collections[0].Path = filepath.Join(c.Collections[0].Path, "one.nt")
	})
	e.write("one.nt", "<http://ex/a> <http://ex/p> \"2\" .\n<http://ex/b> <http://ex/p> \"1\" .\n")
	waitFor(t, "two entries", func() bool { return len(feedResources(e)) == 2 })
}

// TestRestart: the journal, the baseline and the entries' times survive a
// restart; changes made while the server was down are journaled when it
// starts; times never go backwards.
func TestRestart(t *testing.T) {
	e := newEnv(t, map[string]string{"a.nt": "<http://ex/a> <http://ex/p> \"1\" .\n"}, nil)
	c := e.coll()
	base0, _, _ := storeBaseline(t, c)
	e.write("a.nt", "<http://ex/a> <http://ex/p> \"2\" .\n")
	waitFor(t, "the change", func() bool { return len(journal(t, c)) == 1 })
	before := journal(t, c)
	e.stop()
	e.write("a.nt", "<http://ex/a> <http://ex/p> \"2\" .\n<http://ex/b> <http://ex/p> \"1\" .\n")
	e.start()
	c = e.coll()
	if b, _, _ := storeBaseline(t, c); !b.Equal(base0) {
		t.Errorf("baseline %v after restart, was %v", b, base0)
	}
	after := journal(t, c)
	if len(after) != 2 || after[0].Seq != before[0].Seq || !after[0].Time.Equal(before[0].Time) || after[1].Path() != "http://ex/b" {
		t.Fatalf("journal after restart: %+v (before %+v)", after, before)
	}
	e.restart() // nothing changed: nothing journaled
	c = e.coll()
	if got := journal(t, c); len(got) != 2 {
		t.Errorf("an unchanged restart journaled %d records", len(got)-2)
	}
	prev := base0
	for _, ch := range journal(t, c) {
		if ch.Time.Before(prev) {
			t.Errorf("journal time %v before %v", ch.Time, prev)
		}
		prev = ch.Time
	}
	if v := c.version(); !v.updated.Equal(prev) {
		t.Errorf("snapshot updated %v, want the newest change %v", v.updated, prev)
	}
}

// receiver is an SDShare Push receiver on 127.0.0.1 that can be made to
// fail.
type receiver struct {
	mu   sync.Mutex
	down bool
	got  []string // resource per delivered POST, in arrival order
	body map[string]string
	hits int
	srv  *httptest.Server
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{body: map[string]string{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		r.hits++
		if r.down || r.hits%4 == 0 {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		if req.Method != http.MethodPost || req.Header.Get("Content-Type") == "" || req.URL.Query().Get("graph") == "" {
			http.Error(w, "bad push", http.StatusBadRequest)
			return
		}
		res := req.URL.Query().Get("resource")
		r.got = append(r.got, res)
		r.body[res] = string(b)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// TestPush: every journal record is pushed to the receiver in journal
// order, through failures, a receiver outage and a restart of the server
// in the middle (SD-PUSH-1..6); the receiver ends with every resource's
// current fragment, an empty body for a deleted one.
func TestPush(t *testing.T) {
	rcv := newReceiver(t)
	e := newEnv(t, map[string]string{"a.nt": "<http://ex/r0> <http://ex/p> \"0\" .\n"}, func(c *Config) {
		c.Push = []string{rcv.srv.URL + "/push"}
	})
	content := func(n, v int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "<http://ex/r%d> <http://ex/p> \"%d\" .\n", i, v)
		}
		return b.String()
	}
	e.write("a.nt", content(10, 1))
	waitFor(t, "10 changes", func() bool { return len(journal(t, e.coll())) == 10 })
	rcv.mu.Lock()
	rcv.down = true
	rcv.mu.Unlock()
	e.write("a.nt", content(5, 2)) // 5 updates, 5 deletions
	waitFor(t, "20 changes", func() bool { return len(journal(t, e.coll())) == 20 })
	e.restart()
	rcv.mu.Lock()
	rcv.down = false
	rcv.mu.Unlock()
	e.write("a.nt", content(3, 3)+"<http://ex/new> <http://ex/p> _:x .\n_:x <http://ex/q> \"bnode\" .\n")
	c := e.coll()
	waitFor(t, "26 changes", func() bool { return len(journal(t, c)) == 26 })
	var want []string
	for _, ch := range journal(t, c) {
		want = append(want, ch.Path())
	}
	waitFor(t, "every push", func() bool {
		return len(dedupe(rcv.received())) >= len(want)
	})
	// The cursor is stored after the receiver's 2xx: wait for it.
	waitFor(t, "the metrics", func() bool {
		_, metrics := e.get(e.base + "metrics")
		for _, want := range []string{`sdshare_server_resources{collection="c"} 4`, `sdshare_server_journal_seq{collection="c"} 26`,
			`sdshare_server_push_cursor{collection="c",receiver="` + rcv.srv.URL + `/push"} 26`} {
			if !strings.Contains(string(metrics), want) {
				return false
			}
		}
		return true
	})
	got := dedupe(rcv.received())
	if !slices.Equal(got, want) {
		t.Errorf("pushed in order %v, want %v", got, want)
	}
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, iri := range want {
		cur, _ := c.Fragment(context.Background(), iri, rdf.NTriples)
		if rcv.body[iri] != string(cur) {
			t.Errorf("receiver has %q for %s, want %q", rcv.body[iri], iri, cur)
		}
	}
	if rcv.body["http://ex/r9"] != "" {
		t.Errorf("deleted r9 was pushed with a body")
	}
}

// dedupe drops immediate repeats: at-least-once delivery may repeat the
// item whose acknowledgement was not yet stored when the sender stopped.
func dedupe(s []string) []string {
	return slices.Compact(slices.Clone(s))
}

// TestPushNewReceiver: a receiver added to a server that already has a
// baseline and a journal first gets every resource's current fragment,
// then the changes that follow; it ends with the collection's graph.
func TestPushNewReceiver(t *testing.T) {
	rcv := newReceiver(t)
	e := newEnv(t, map[string]string{"a.nt": "<http://ex/a> <http://ex/p> \"1\" .\n<http://ex/b> <http://ex/p> _:x .\n_:x <http://ex/q> \"b\" .\n"}, nil)
	e.write("a.nt", "<http://ex/a> <http://ex/p> \"2\" .\n<http://ex/b> <http://ex/p> _:x .\n_:x <http://ex/q> \"b\" .\n<http://ex/c> <http://ex/p> \"1\" .\n")
	waitFor(t, "two changes", func() bool { return len(journal(t, e.coll())) == 2 })
	e.stop()
	e.cfg.Push = []string{rcv.srv.URL + "/push"}
	e.start()
	e.write("a.nt", "<http://ex/a> <http://ex/p> \"3\" .\n<http://ex/b> <http://ex/p> _:x .\n_:x <http://ex/q> \"b\" .\n")
	c := e.coll()
	waitFor(t, "the next changes", func() bool { return len(journal(t, c)) == 4 })
	waitFor(t, "the receiver to hold the graph", func() bool {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		for _, iri := range []string{"http://ex/a", "http://ex/b", "http://ex/c"} {
			cur, _ := c.Fragment(context.Background(), iri, rdf.NTriples)
			if b, ok := rcv.body[iri]; !ok || b != string(cur) {
				return false
			}
		}
		return true
	})
	if got := rcv.received(); !slices.Contains(got, "http://ex/b") {
		t.Errorf("baseline resource b never pushed: %v", got)
	}
}
