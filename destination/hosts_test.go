package destination_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/source"
)

// TestOtherNameSuggestsBase: a Source published as http://localhost:PORT/
// and typed as http://127.0.0.1:PORT/ fails with an error that gives the
// --base to use (not only --allow-host), and that --base works (issue 19,
// 5b).
func TestOtherNameSuggestsBase(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("a"))
	ts := startSource(t, dir, nil, func(c *source.Config) {
		c.BaseURL = strings.Replace(c.BaseURL, "127.0.0.1", "localhost", 1)
	})
	local := strings.Replace(ts.base, "127.0.0.1", "localhost", 1)
	_, err := destination.Sync(context.Background(), ts.base, syncOpts(t, t.TempDir()))
	if !errors.Is(err, destination.ErrDiscovery) || !errors.Is(err, fetch.ErrOffOrigin) || !strings.Contains(err.Error(), "--base "+local) {
		t.Fatalf("want a discovery error suggesting --base %s, got %v", local, err)
	}
	t.Logf("error: %v", err)
	dest := t.TempDir()
	opt := syncOpts(t, dest)
	opt.Base = local
	if sr := one(t, mustSync(t, ts.base, opt)); sr.Fetched != 1 || sr.Failed != 0 {
		t.Fatalf("with --base %s: %+v", local, sr)
	}
	sameTree(t, dir, dest)
}

// TestAllowHostResources: two loopback servers, the Source and a "CDN" on
// another port holding some of its resources. With --allow-host naming
// the CDN, its resources are mirrored into DEST/_hosts/<host>_<port>/,
// audited and deleted like the Source's own; without, they are refused
// and the CDN is never asked (issue 19, 5a).
func TestAllowHostResources(t *testing.T) {
	var cdnHits atomic.Int32
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cdnHits.Add(1)
		if r.URL.Path != "/img/pic.png" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("picture"))
	}))
	defer cdn.Close()
	cu, _ := url.Parse(cdn.URL)
	src := newMutableSource(t, map[string]string{
		"/capabilitylist.xml": capListCL,
		"/resourcelist.xml":   resourceList("{base}own.txt", cdn.URL+"/img/pic.png"),
		"/changelist.xml":     changeList(),
		"/own.txt":            "own",
	})
	cl := src.base + "capabilitylist.xml"

	// Not allowed: refused, never fetched.
	sr := one(t, mustSync(t, cl, syncOpts(t, t.TempDir())))
	if sr.Fetched != 1 || sr.Failed != 1 || !strings.Contains(sr.Failures[0].Error, "outside the Source's authority") || cdnHits.Load() != 0 {
		t.Fatalf("without --allow-host: %+v (CDN asked %d times)", sr, cdnHits.Load())
	}

	dest := t.TempDir()
	opt := syncOpts(t, dest)
	opt.AllowHosts = []string{cu.Host}
	sr = one(t, mustSync(t, cl, opt))
	if sr.Fetched != 2 || sr.Failed != 0 || !sr.Checkpoint.Baseline {
		t.Fatalf("with --allow-host %s: %+v", cu.Host, sr)
	}
	hostDir := strings.ReplaceAll(cu.Host, ":", "_")
	got := tree(t, dest)
	if len(got) != 2 || string(got["own.txt"]) != "own" || string(got["_hosts/"+hostDir+"/img/pic.png"]) != "picture" {
		t.Fatalf("DEST holds %v", got)
	}

	// An audit checks both (the list has no digests: unverifiable) and
	// finds a file put in the CDN's directory by hand.
	stray := filepath.Join(dest, "_hosts", hostDir, "img", "stray.png")
	if err := os.WriteFile(stray, []byte("stray"), 0o644); err != nil {
		t.Fatal(err)
	}
	aopt := syncOpts(t, dest)
	aopt.AllowHosts, aopt.Mode = opt.AllowHosts, destination.ModeAudit
	sr = one(t, mustSync(t, cl, aopt))
	if sr.Audit[destination.AuditUnverifiable] != 2 || sr.Audit[destination.AuditExtra] != 1 || sr.Audit[destination.AuditMissing] != 0 {
		t.Fatalf("audit: %+v", sr)
	}
	os.Remove(stray)

	// The Source deletes the CDN's resource: the file goes, and the
	// directories it leaves empty.
	src.set("/changelist.xml", strings.Replace(changeList(`<url><loc>`+cdn.URL+`/img/pic.png</loc><rs:md change="deleted" datetime="2026-01-02T12:00:00Z"/></url>`),
		`from="2026-01-01T00:00:00Z" until="2026-01-02T00:00:00Z"`, `from="2026-01-01T00:00:00Z" until="2026-01-03T00:00:00Z"`, 1))
	sr = one(t, mustSync(t, cl, opt))
	if sr.Mode != "incremental" || sr.Deleted != 1 || sr.Failed != 0 {
		t.Fatalf("deletion: %+v", sr)
	}
	if got := tree(t, dest); len(got) != 1 {
		t.Fatalf("after the deletion DEST holds %v", got)
	}
	if _, err := os.Stat(filepath.Join(dest, destination.HostsDirName)); !os.IsNotExist(err) {
		t.Fatalf("%s left behind: %v", destination.HostsDirName, err)
	}
}

// TestAllowHostRemovedKeepsFiles: a baseline run without the --allow-host
// of the run that mirrored a CDN's resource reports the resource as
// refused, and leaves its file in DEST/_hosts/ as it is: the Resource
// List still names it, so it was not deleted at the Source.
func TestAllowHostRemovedKeepsFiles(t *testing.T) {
	cdn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("picture")) }))
	defer cdn.Close()
	cu, _ := url.Parse(cdn.URL)
	src := newMutableSource(t, map[string]string{
		"/capabilitylist.xml": capListCL,
		"/resourcelist.xml":   resourceList("{base}own.txt", cdn.URL+"/img/pic.png"),
		"/changelist.xml":     changeList(),
		"/own.txt":            "own",
	})
	cl := src.base + "capabilitylist.xml"
	dest := t.TempDir()
	opt := syncOpts(t, dest)
	opt.AllowHosts = []string{cu.Host}
	if sr := one(t, mustSync(t, cl, opt)); sr.Fetched != 2 || sr.Failed != 0 {
		t.Fatalf("with --allow-host: %+v", sr)
	}
	pic := filepath.Join(dest, destination.HostsDirName, strings.ReplaceAll(cu.Host, ":", "_"), "img", "pic.png")
	for _, mode := range []destination.Mode{destination.ModeBaseline, destination.ModeAudit} {
		opt = syncOpts(t, dest)
		opt.Mode, opt.Repair = mode, mode == destination.ModeAudit
		sr := one(t, mustSync(t, cl, opt))
		if sr.Deleted != 0 || sr.Failed != 1 {
			t.Errorf("%s without --allow-host: %+v", sr.Mode, sr)
		}
		if b, err := os.ReadFile(pic); err != nil || string(b) != "picture" {
			t.Fatalf("%s: the CDN's file, still listed, was removed: %v", sr.Mode, err)
		}
	}
}
