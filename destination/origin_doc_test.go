package destination_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/destination/fetch"
)

// TestDocumentOffOrigin: a Capability List that names its Resource List on
// another authority must not make the Destination fetch it (a third host
// would decide what the list says) unless the user allows that host; the
// run fails with ErrOffOrigin. Found by an attack review: only redirects
// and resource locations were checked, not the documents themselves.
func TestDocumentOffOrigin(t *testing.T) {
	var hitsB atomic.Int32
	var urlB string
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hitsB.Add(1)
		w.Write([]byte(resourceList(urlB + "/evil.txt")))
	}))
	defer b.Close()
	urlB = b.URL
	src := newMutableSource(t, map[string]string{
		"/capabilitylist.xml": `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="capabilitylist"/>
  <url><loc>` + b.URL + `/resourcelist.xml</loc><rs:md capability="resourcelist"/></url>
</urlset>`,
	})

	dest := filepath.Join(t.TempDir(), "dest")
	rep, err := destination.Sync(context.Background(), src.base+"capabilitylist.xml", syncOpts(t, dest))
	if hitsB.Load() != 0 {
		t.Fatalf("the other authority was requested %d times", hitsB.Load())
	}
	ok := err == nil && rep.OK(false, false)
	if ok {
		t.Fatalf("sync reported success although its Resource List is on another authority")
	}
	if err != nil && !errors.Is(err, fetch.ErrOffOrigin) {
		t.Fatalf("sync: %v, want ErrOffOrigin", err)
	}
	if err == nil {
		found := false
		for _, s := range rep.Sets {
			for _, f := range s.Failures {
				found = found || f.Error != ""
			}
		}
		if !found {
			t.Fatalf("no failure reported: %+v", rep)
		}
	}
	t.Logf("refused: %v", err)

	// Allowed by the user: the list is read (its resource on B is then
	// outside the Source's base and refused by the mapper, as before).
	u, _ := url.Parse(b.URL)
	opt := syncOpts(t, filepath.Join(t.TempDir(), "dest2"))
	opt.AllowHosts = []string{u.Host}
	destination.Sync(context.Background(), src.base+"capabilitylist.xml", opt)
	if hitsB.Load() == 0 {
		t.Fatalf("with --allow-host %s the list was still not requested", u.Host)
	}
}
