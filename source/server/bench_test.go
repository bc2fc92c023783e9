package server

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/source/scan"
)

// discardWriter is a ResponseWriter that keeps nothing but its header
// map, so that the benchmark measures the handler alone.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkServeSmall is the handler's own cost of a GET of a 1 KiB
// resource (inventory lookup, open, checks, read, headers), without the
// HTTP server around it: the part of the Source's per-GET cost that is
// ours.
func BenchmarkServeSmall(b *testing.B) {
	dir := b.TempDir()
	os.WriteFile(filepath.Join(dir, "f.bin"), make([]byte, 1024), 0o644)
	st := scannedStore(b, dir)
	h := &Handler{Docs: b.TempDir(), Mount: "/", Sets: []Set{{Prefix: "/", Dir: dir, Store: st, CapabilityList: "http://x/.resourcesync/default/capabilitylist.xml"}}}
	r := httptest.NewRequest(http.MethodGet, "/f.bin", nil)
	w := &discardWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		h.ServeHTTP(w, r)
	}
}

// FuzzDescends: descends says what splitRel says, and unescape what
// scan.UnescapePath says.
func FuzzDescends(f *testing.F) {
	for _, s := range []string{"a/b", "a//b", "./a", "a/..", "a/b/", "", "a\x00", "caf%C3%A9/x", "%2F"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := splitRel(s)
		if descends(s) != (err == nil) {
			t.Fatalf("descends(%q) = %v, splitRel: %v", s, descends(s), err)
		}
		u1, err1 := unescape(s)
		u2, err2 := scan.UnescapePath(s)
		if (err1 == nil) != (err2 == nil) || u1 != u2 {
			t.Fatalf("unescape(%q) = %q, %v; UnescapePath: %q, %v", s, u1, err1, u2, err2)
		}
	})
}
