package server

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/source/notify"
)

var (
	locRE  = regexp.MustCompile(`<loc>([^<]*)</loc>`)
	hashRE = regexp.MustCompile(`sha-256:([0-9a-f]{64})`)
)

// TestResourceSyncView: with ResourceSync set, the collection is also a
// ResourceSync Source whose resources are the fragments, with hashes that
// match the bytes served, and whose Change Lists come from the same
// journal as the fragments feed.
func TestResourceSyncView(t *testing.T) {
	e := newEnv(t, map[string]string{"d.nt": fixture}, func(c *Config) { c.ResourceSync = true })
	resp, sd := e.get(e.base + ".well-known/resourcesync")
	if resp.StatusCode != 200 || !strings.Contains(string(sd), e.base+".resourcesync/c/capabilitylist.xml") {
		t.Fatalf("source description: %s\n%s", resp.Status, sd)
	}
	_, rl := e.get(e.base + ".resourcesync/c/resourcelist.xml")
	locs := locRE.FindAllStringSubmatch(string(rl), -1)
	hashes := hashRE.FindAllStringSubmatch(string(rl), -1)
	if len(locs) != 3 || len(hashes) != 3 {
		t.Fatalf("resource list: %d locs, %d hashes, want 3 (a, b, c)\n%s", len(locs), len(hashes), rl)
	}
	for i, l := range locs {
		resp, body := e.get(l[1])
		sum := sha256.Sum256(body)
		if resp.StatusCode != 200 || hex.EncodeToString(sum[:]) != hashes[i][1] || resp.Header.Get("Content-Type") != "application/n-triples" {
			t.Errorf("%s: %s %q, sha-256 %x, listed %s", l[1], resp.Status, resp.Header.Get("Content-Type"), sum, hashes[i][1])
		}
	}
	// A change reaches the Change List.
	e.write("d.nt", strings.Replace(fixture, `"Alpha"`, `"Alpha 2"`, 1))
	waitFor(t, "the change list", func() bool {
		_, idx := e.get(e.base + ".resourcesync/c/changelist.xml")
		for _, l := range locRE.FindAllStringSubmatch(string(idx), -1) {
			if _, cl := e.get(l[1]); strings.Contains(string(cl), "/c/rs/"+rsPath("http://ex/a")+"</loc>") && strings.Contains(string(cl), `change="updated"`) {
				return true
			}
		}
		return false
	})
	if resp, _ := e.get(e.base + "c/rs/" + rsPath("http://ex/gone")); resp.StatusCode != 404 {
		t.Errorf("unknown resource: %s, want 404", resp.Status)
	}
}

// TestCanonicalIsRDFHash: the bytes served hash to rdf.Hash of the
// fragment.
func TestCanonicalIsRDFHash(t *testing.T) {
	ts := parseAll(t, fixture, rdf.NTriples)
	if _, b := canonical(ts); sha256.Sum256(b) != rdf.Hash(ts) {
		t.Errorf("canonical bytes do not hash to rdf.Hash:\n%s", b)
	}
}

// TestResourceSyncNotifications: with a Notifier, a change of the
// collection reaches the hub as a ResourceSync Change Notification on the
// collection's topic, after the Change List has it.
func TestResourceSyncNotifications(t *testing.T) {
	var mu sync.Mutex
	var posts []string
	hub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		posts = append(posts, strings.Join(r.Header.Values("Link"), ", ")+"\n"+string(b))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer hub.Close()
	e := newEnv(t, map[string]string{"d.nt": fixture}, func(c *Config) {
		c.ResourceSync = true
		c.Notifier = &notify.Notifier{Pub: &notify.HTTPPublisher{Hub: hub.URL, Client: c.PushClient}, Hub: hub.URL}
	})
	topic := e.base + ".resourcesync/c/notifications"
	e.write("d.nt", strings.Replace(fixture, `"Alpha"`, `"Alpha 2"`, 1))
	waitFor(t, "a notification", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range posts {
			if strings.Contains(p, "<"+topic+">") && strings.Contains(p, "/c/rs/"+rsPath("http://ex/a")+"</loc>") && strings.Contains(p, `change="updated"`) {
				return true
			}
		}
		return false
	})
	if resp, body := e.get(topic); resp.StatusCode != 200 || !strings.Contains(string(body), rsPath("http://ex/a")) {
		t.Errorf("topic URL: %s\n%s", resp.Status, body)
	}
	if _, cl := e.get(e.base + ".resourcesync/c/capabilitylist.xml"); !strings.Contains(string(cl), hub.URL) {
		t.Errorf("capability list does not name the hub:\n%s", cl)
	}
}
