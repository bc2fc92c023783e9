package source_test

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/storage"
	"github.com/resourcesync-go/resourcesync/storage/mem"
)

// countingContent counts the Opens of a Content.
type countingContent struct {
	storage.Content
	opens atomic.Int64
	last  atomic.Pointer[[2]int64] // the last Open's offset and length
}

func (c *countingContent) Open(ctx context.Context, key string, off, n int64) (io.ReadCloser, storage.Info, error) {
	c.opens.Add(1)
	c.last.Store(&[2]int64{off, n})
	return c.Content.Open(ctx, key, off, n)
}

// memTree returns the objects of a mem Store, as tree does a directory's
// files.
func memTree(s *mem.Store) map[string][]byte {
	m := map[string][]byte{}
	for _, k := range s.Keys() {
		o, _, _ := s.Get(k)
		m[k] = o.Data
	}
	return m
}

func dirTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == destination.StateDirName {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		m[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sameMaps(t *testing.T, step string, want, got map[string][]byte) {
	t.Helper()
	var diffs []string
	for k, v := range want {
		if w, ok := got[k]; !ok || !bytes.Equal(v, w) {
			diffs = append(diffs, "missing or different "+k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			diffs = append(diffs, "extra "+k)
		}
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		t.Fatalf("%s: the mirror differs from the bucket: %q", step, diffs)
	}
}

// A Source on a Content that is not a directory (mem://, as a bucket):
// through a history of additions, changes, deletions and a rewrite with
// the same bytes, a real Destination mirrors it exactly after each step;
// a rescan of unchanged objects opens none; resources are served with
// ranges and conditional requests from the Content.
func TestContentSourceHistory(t *testing.T) {
	ctx := context.Background()
	name := "source-history"
	mem.Forget(name)
	t.Cleanup(func() { mem.Forget(name) })
	ms := mem.Open(name)
	old := time.Now().Add(-time.Hour)
	put := func(key, data string) {
		t.Helper()
		if _, err := ms.PutObject(key, mem.Object{Data: []byte(data), ModTime: old}); err != nil {
			t.Fatal(err)
		}
		old = old.Add(time.Second)
	}
	put("a.txt", "alpha")
	put("a/b.txt", "beta")
	put("a0", "zero")
	put("sp ace/caf\u00e9 #1.txt", "escaped")
	put(".hidden", "not published")
	put("big.bin", string(bytes.Repeat([]byte("0123456789"), 100_000)))

	mc, err := storage.OpenContent(ctx, "mem://"+name)
	if err != nil {
		t.Fatal(err)
	}
	cc := &countingContent{Content: mc}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/"
	src, err := source.Open(source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "default", Content: cc}},
		StateDir: t.TempDir(), ChangeListPeriod: time.Hour, Dumps: true, DumpsOnDemand: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: src.Handler(nil)}}
	srv.Start()
	t.Cleanup(srv.Close)

	client, _ := testnet.Client(t)
	dest := t.TempDir()
	truth := func() map[string][]byte {
		m := memTree(ms)
		delete(m, ".hidden")
		return m
	}
	step := func(what string) {
		t.Helper()
		time.Sleep(5 * time.Millisecond) // the journal orders changes by time
		if _, err := src.Update(ctx); err != nil {
			t.Fatalf("%s: update: %v", what, err)
		}
		if _, err := destination.Sync(ctx, base, destination.Options{Dest: dest, Client: client, Workers: 4, BaseDelay: time.Millisecond, MaxDelay: 20 * time.Millisecond}); err != nil {
			t.Fatalf("%s: sync: %v", what, err)
		}
		sameMaps(t, what, truth(), dirTree(t, dest))
	}
	step("baseline")

	// Unchanged: the rescan opens nothing.
	before := cc.opens.Load()
	rep, err := src.Update(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := cc.opens.Load() - before; n != 0 || rep.Scans["default"].Unchanged != 5 {
		t.Fatalf("rescan of unchanged objects: %d opens, %+v", n, rep.Scans["default"])
	}

	put("a/b.txt", "beta, changed")
	put("new/one.txt", "new")
	ms.Delete("a0")
	put("a.txt", "alpha") // the same bytes again: same Version, not read
	before = cc.opens.Load()
	step("changes")
	if n := cc.opens.Load() - before; n < 2 {
		t.Fatalf("the changed and new objects were not read: %d opens", n)
	}

	// The on-demand Resource Dump streams its members from the Content.
	checkDump(t, client, base+".resourcesync/default/resourcedump.xml", truth())

	// Served from the Content: a range, a HEAD, a conditional GET.
	get := func(method, path string, h map[string]string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, nil)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	resp, b := get("GET", "big.bin", map[string]string{"Range": "bytes=999995-1000004"})
	if resp.StatusCode != http.StatusPartialContent || string(b) != "56789" {
		t.Fatalf("range: %s %q", resp.Status, b)
	}
	resp, b = get("GET", "big.bin", map[string]string{"Range": "bytes=12-21"})
	if resp.StatusCode != http.StatusPartialContent || string(b) != "2345678901" || *cc.last.Load() != [2]int64{12, 10} {
		t.Fatalf("range inside: %s %q, opened at %v", resp.Status, b, *cc.last.Load())
	}
	// An If-Range that does not match gets the whole object, past the
	// range first opened; several ranges get each.
	resp, b = get("GET", "big.bin", map[string]string{"Range": "bytes=0-9", "If-Range": `"other"`})
	if big, _, _ := ms.Get("big.bin"); resp.StatusCode != 200 || !bytes.Equal(b, big.Data) {
		t.Fatalf("If-Range not matching: %s, %d bytes", resp.Status, len(b))
	}
	resp, b = get("GET", "big.bin", map[string]string{"Range": "bytes=1-2,999998-999999"})
	if resp.StatusCode != http.StatusPartialContent || !bytes.Contains(b, []byte("\r\n\r\n12\r\n")) || !bytes.Contains(b, []byte("\r\n\r\n89\r\n")) {
		t.Fatalf("two ranges: %s %q", resp.Status, b)
	}
	resp, b = get("HEAD", "a/b.txt", nil)
	if resp.StatusCode != 200 || len(b) != 0 || resp.ContentLength != int64(len("beta, changed")) || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("HEAD: %s %d %q", resp.Status, resp.ContentLength, resp.Header.Get("Content-Type"))
	}
	resp, _ = get("GET", "a/b.txt", map[string]string{"If-None-Match": resp.Header.Get("ETag")})
	if resp.StatusCode != http.StatusNotModified {
		t.Fatalf("conditional GET: %s", resp.Status)
	}
	if resp, _ = get("GET", ".hidden", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a hidden key: %s", resp.Status)
	}
	// Changed behind the Source's back: not served until rescanned.
	put("a/b.txt", "changed again")
	if resp, _ = get("GET", "a/b.txt", nil); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("an object changed since the scan: %s", resp.Status)
	}
	step("changed again")

	// Emptied: refused, the last state stays published.
	for _, k := range ms.Keys() {
		ms.Delete(k)
	}
	if _, err := src.Update(ctx); !source.Refused(err) {
		t.Fatalf("update of an emptied Content: %v, want a refusal (%v)", err, scan.ErrEmptyRoot)
	}
}

// checkDump downloads every package of the Resource Dump at url and checks
// that its members are, together, exactly want.
func checkDump(t *testing.T, c *http.Client, url string, want map[string][]byte) {
	t.Helper()
	get := func(u string) []byte {
		t.Helper()
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s, %v", u, resp.Status, err)
		}
		return b
	}
	dec := rs.NewDecoder(bytes.NewReader(get(url)))
	if _, err := dec.Head(); err != nil {
		t.Fatal(err)
	}
	got := map[string][]byte{}
	for e, err := range dec.All() {
		if err != nil {
			t.Fatal(err)
		}
		zb := get(e.Loc)
		zr, err := zip.NewReader(bytes.NewReader(zb), int64(len(zb)))
		if err != nil {
			t.Fatalf("%s: %v", e.Loc, err)
		}
		for _, f := range zr.File[1:] { // manifest.xml first
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(rc) // checks the CRC-32
			rc.Close()
			if err != nil {
				t.Fatalf("%s: %s: %v", e.Loc, f.Name, err)
			}
			k, err := scan.UnescapePath(strings.TrimPrefix(f.Name, "resources/"))
			if err != nil {
				t.Fatal(err)
			}
			got[k] = b
		}
	}
	sameMaps(t, "resource dump", want, got)
}
