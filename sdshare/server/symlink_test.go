//go:build unix

package server

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSymlinksNotPublished: a symbolic link in a collection directory (to
// an RDF file outside it, to a non-RDF file, to a directory) publishes
// nothing of what it points at, is logged, and /healthz says only
// "degraded" and a count: no path and no content of the files. A file
// that is not valid RDF is reported the same way. Found by an attack
// review: the link's target was parsed and served, and a parse error put
// the target's first token and the server's path on /healthz.
func TestSymlinksNotPublished(t *testing.T) {
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.ttl"), []byte("<http://ex/secret> <http://ex/p> \"secret\" .\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("TOPSECRETTOKEN and the rest\n"), 0o644)

	e := newEnv(t, map[string]string{"a.nt": "<http://ex/a> <http://ex/p> \"1\" .\n"}, nil)
	c := e.coll()
	for link, target := range map[string]string{
		"link.ttl": filepath.Join(outside, "secret.ttl"),
		"bad.ttl":  filepath.Join(outside, "secret.txt"),
		"dir":      outside,
	} {
		if err := os.Symlink(target, filepath.Join(e.dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	e.write("b.nt", "<http://ex/b> <http://ex/p> \"2\" .\n") // a change, so a reload runs
	waitFor(t, "b published", func() bool { return slices.Contains(feedResources(e), "http://ex/b") })
	waitFor(t, "the links refused", func() bool { return c.refused.Load() == 3 })

	if r := feedResources(e); !slices.Equal(r, []string{"http://ex/b"}) {
		t.Errorf("fragments %v, want only b's", r)
	}
	var res []string
	for _, r := range resourcesOf(t, c.version()) {
		res = append(res, r.Value)
	}
	if !slices.Equal(res, []string{"http://ex/a", "http://ex/b"}) {
		t.Errorf("the graph holds %v, want only a and b", res)
	}
	if _, body := e.get(fragmentURL(e, "http://ex/secret")); strings.Contains(string(body), "secret\"") {
		t.Errorf("the file behind the link is served: %q", body)
	}
	private := []string{"TOPSECRETTOKEN", e.dir, outside, "secret.txt", "bad.ttl"}
	checkHealth := func(want string) {
		t.Helper()
		_, body := e.get(e.base + "healthz")
		if !strings.Contains(string(body), "degraded") || !strings.Contains(string(body), want) {
			t.Errorf("healthz does not say degraded and %q: %s", want, body)
		}
		for _, p := range private {
			if strings.Contains(string(body), p) {
				t.Errorf("healthz shows %q: %s", p, body)
			}
		}
	}
	checkHealth("3 files not published")
	for _, l := range []string{"link.ttl", "bad.ttl", "dir"} {
		if !strings.Contains(e.logs.String(), filepath.Join(e.dir, l)) {
			t.Errorf("the refused link %s is not logged", l)
		}
	}

	// A regular file that is not RDF: the load fails, the error (which
	// quotes the file) is logged, /healthz only says so.
	e.write("junk.ttl", "TOPSECRETTOKEN and the rest\n")
	waitFor(t, "a failed reload", func() bool { return c.LastError() != nil })
	checkHealth("the last reload failed")
	waitFor(t, "the parse error logged", func() bool { return strings.Contains(e.logs.String(), "junk.ttl") })

	// Links removed, junk fixed: healthy again.
	for _, l := range []string{"link.ttl", "bad.ttl", "dir"} {
		os.Remove(filepath.Join(e.dir, l))
	}
	os.Remove(filepath.Join(e.dir, "junk.ttl"))
	waitFor(t, "recovery", func() bool { return c.LastError() == nil && c.refused.Load() == 0 })
	if _, body := e.get(e.base + "healthz"); strings.Contains(string(body), "degraded") {
		t.Errorf("healthz still degraded: %s", body)
	}
}
