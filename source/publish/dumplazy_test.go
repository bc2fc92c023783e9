package publish_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
)

// lazyServer serves out as files and, for what is no file there, the
// on-demand packages of the Dumps it is given (a fresh Dumps per request
// when fresh is set: no CRC learnt from an earlier download).
type lazyServer struct {
	out   string
	cfg   atomic.Pointer[publish.Config]
	dumps atomic.Pointer[publish.Dumps]
	fresh atomic.Bool
	files http.Handler
}

func newLazyServer(t *testing.T, out string) (*lazyServer, string) {
	ls := &lazyServer{out: out, files: http.FileServer(http.Dir(out))}
	srv := httptest.NewServer(ls)
	t.Cleanup(srv.Close)
	return ls, srv.URL + "/"
}

func (ls *lazyServer) set(t *testing.T, cfg publish.Config) {
	d, err := publish.NewDumps(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ls.cfg.Store(&cfg)
	ls.dumps.Store(d)
}

func (ls *lazyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rel := strings.TrimPrefix(r.URL.Path, "/")
	if _, err := os.Stat(filepath.Join(ls.out, filepath.FromSlash(rel))); err != nil {
		d := ls.dumps.Load()
		if ls.fresh.Load() {
			d, _ = publish.NewDumps(*ls.cfg.Load())
		}
		if d != nil && d.Serve(w, r, rel) {
			return
		}
	}
	ls.files.ServeHTTP(w, r)
}

func get(t *testing.T, url string, hdr ...string) (*http.Response, []byte, error) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// checkLazyPackage downloads the package of entry e and checks it as
// checkPackage checks a file: exact length, manifest.xml first and equal
// to the rel="contents" copy, each bitstream matching the manifest. It
// returns the package and its manifest entries.
func checkLazyPackage(t *testing.T, e rs.Entry) ([]byte, []rs.Entry) {
	t.Helper()
	resp, zb, err := get(t, e.Loc)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", e.Loc, resp.StatusCode, err)
	}
	if e.MD.Type != "application/zip" || e.MD.Length != int64(len(zb)) || len(e.MD.Hashes) != 0 {
		t.Errorf("%s: metadata %+v, package of %d bytes", e.Loc, e.MD, len(zb))
	}
	_, copyBytes, err := get(t, e.Link(rs.RelContents))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(zb), int64(len(zb)))
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) == 0 || zr.File[0].Name != "manifest.xml" {
		t.Fatalf("%s: manifest.xml is not first", e.Loc)
	}
	read := func(f *zip.File) []byte {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc) // checks the CRC-32
		if err != nil {
			t.Fatalf("%s: %s: %v", e.Loc, f.Name, err)
		}
		return b
	}
	if !bytes.Equal(read(zr.File[0]), copyBytes) {
		t.Errorf("%s: manifest copy differs from the packaged manifest", e.Loc)
	}
	dec := rs.NewDecoder(bytes.NewReader(copyBytes))
	if _, err := dec.Head(); err != nil {
		t.Fatal(err)
	}
	files := map[string]*zip.File{}
	for _, f := range zr.File[1:] {
		files[f.Name] = f
	}
	var es []rs.Entry
	for m, err := range dec.All() {
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, *m)
		if m.MD.Change == rs.Deleted {
			continue
		}
		f := files[strings.TrimPrefix(m.MD.Path, "/")]
		if f == nil {
			t.Fatalf("%s: %s not in the package", e.Loc, m.MD.Path)
		}
		b := read(f)
		s := sha256.Sum256(b)
		if int64(len(b)) != m.MD.Length || hex.EncodeToString(s[:]) != m.MD.Hashes.Get(rs.SHA256) {
			t.Errorf("%s: bitstream %s does not match its manifest entry", e.Loc, m.MD.Path)
		}
		delete(files, f.Name)
	}
	if len(files) != 0 {
		t.Errorf("%s: %d members not in the manifest", e.Loc, len(files))
	}
	return zb, es
}

func docEntries(t *testing.T, url string) (rs.Head, []rs.Entry) {
	t.Helper()
	_, b, err := get(t, url)
	if err != nil {
		t.Fatal(err)
	}
	dec := rs.NewDecoder(bytes.NewReader(b))
	h, err := dec.Head()
	if err != nil {
		t.Fatal(err)
	}
	var es []rs.Entry
	for e, err := range dec.All() {
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, *e)
	}
	return *h, es
}

// TestDumpsOnDemand: with DumpsOnDemand no package is written, and every
// package is produced on request, byte for byte the package the
// materialised dump writes for the same inventory; the same bytes on every
// request; a Range from the middle (with no CRC learnt before) is the
// tail; archive/zip and unzip read it; a file changed under the stream
// aborts the download before its bytes go out.
func TestDumpsOnDemand(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	fill := func(dir string) *bolt.DB {
		st := openStore(t, "")
		for i := range 20 {
			apply(t, st, dir, rs.Created, filepathN(i), strings.Repeat(string(rune('a'+i)), 50+i*1000), t0.Add(time.Duration(i)*time.Second))
		}
		// A file larger than what is read whole (streamed, verified at its end).
		apply(t, st, dir, rs.Created, "big/large.bin", strings.Repeat("0123456789abcdef", 40000), t0.Add(30*time.Second))
		t1 := t0.Add(time.Hour)
		apply(t, st, dir, rs.Updated, filepathN(1), "one", t1)
		apply(t, st, dir, rs.Deleted, filepathN(2), "", t1.Add(time.Second))
		apply(t, st, dir, rs.Updated, filepathN(3), "three-a", t1.Add(2*time.Second))
		apply(t, st, dir, rs.Updated, filepathN(3), "three-b", t1.Add(3*time.Second))
		return st
	}
	cfgOf := func(base, out, dir string, st *bolt.DB, lazy bool) publish.Config {
		return publish.Config{BaseURL: base, Out: out, Dumps: true, DumpsOnDemand: lazy, MaxEntries: 7, DumpPartBytes: 30000, DumpInterval: time.Hour,
			Now: func() time.Time { return t0.Add(2*time.Hour + time.Minute) }, Logger: quiet, NoCompanions: true,
			Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
	}

	// The materialised dump of the same inventory, for comparison.
	out, dir := t.TempDir(), t.TempDir()
	ls, base := newLazyServer(t, out)
	// Written under the same base URL (locs are in the manifests), read
	// from its files.
	fileOut, fileDir := t.TempDir(), t.TempDir()
	if _, err := publish.Publish(context.Background(), cfgOf(base, fileOut, fileDir, fill(fileDir), false)); err != nil {
		t.Fatal(err)
	}
	fileGet := func(u string) []byte {
		b, err := os.ReadFile(filepath.Join(fileOut, filepath.FromSlash(strings.TrimPrefix(u, base))))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	fileEntries := func(u string) []rs.Entry {
		dec := rs.NewDecoder(bytes.NewReader(fileGet(u)))
		dec.Head()
		var es []rs.Entry
		for e, err := range dec.All() {
			if err != nil {
				t.Fatal(err)
			}
			es = append(es, *e)
		}
		return es
	}
	st := fill(dir)
	cfg := cfgOf(base, out, dir, st, true)
	ls.set(t, cfg)
	rep, err := publish.Publish(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if sr := rep.Sets[0]; !sr.ResourceDump || sr.DumpParts < 3 || sr.ChangeDumps != 4 {
		t.Fatalf("report %+v", sr)
	}
	filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if strings.HasSuffix(p, ".zip") {
			t.Errorf("package written: %s", p)
		}
		return nil
	})
	mustWalkClean(t, base)

	_, es := docEntries(t, base+".resourcesync/default/resourcedump.xml")
	fes := fileEntries(base + ".resourcesync/default/resourcedump.xml")
	if len(es) != len(fes) {
		t.Fatalf("%d packages on demand, %d written", len(es), len(fes))
	}
	total := 0
	for i, e := range es {
		zb, m := checkLazyPackage(t, e)
		total += len(m)
		want := fileGet(fes[i].Loc)
		if !bytes.Equal(zb, want) {
			t.Errorf("package %d differs from the written one (%d and %d bytes)", i, len(zb), len(want))
		}
		_, again, _ := get(t, e.Loc)
		if !bytes.Equal(zb, again) {
			t.Errorf("package %d: two downloads differ", i)
		}
		// Ranges from a Dumps that has learnt no CRC: from the middle of a
		// member to the end, and a middle slice.
		ls.fresh.Store(true)
		for _, off := range []int{len(zb) / 2, len(zb) / 3, len(zb) - 30} {
			resp, tail, err := get(t, e.Loc, "Range", fmt.Sprintf("bytes=%d-", off))
			if err != nil || resp.StatusCode != http.StatusPartialContent || !bytes.Equal(tail, zb[off:]) {
				t.Errorf("package %d: range from %d: %d, %d bytes, %v", i, off, resp.StatusCode, len(tail), err)
			}
		}
		resp, mid, err := get(t, e.Loc, "Range", fmt.Sprintf("bytes=%d-%d", len(zb)/4, len(zb)/2))
		if err != nil || resp.StatusCode != http.StatusPartialContent || !bytes.Equal(mid, zb[len(zb)/4:len(zb)/2+1]) {
			t.Errorf("package %d: middle range: %d %v", i, resp.StatusCode, err)
		}
		ls.fresh.Store(false)
		if path, err := exec.LookPath("unzip"); err == nil {
			f := filepath.Join(t.TempDir(), "p.zip")
			os.WriteFile(f, zb, 0o644)
			if out, err := exec.Command(path, "-t", f).CombinedOutput(); err != nil {
				t.Errorf("unzip -t: %v\n%s", err, out)
			}
		}
	}
	if total != 20 {
		t.Errorf("resource dump holds %d resources, want 20", total)
	}

	// Change Dumps: the same packages as written.
	_, ces := docEntries(t, base+".resourcesync/default/changedump.xml")
	fces := fileEntries(base + ".resourcesync/default/changedump.xml")
	if len(ces) != 4 || len(fces) != 4 {
		t.Fatalf("%d change dump packages on demand, %d written; want 4", len(ces), len(fces))
	}
	for i, e := range ces {
		zb, _ := checkLazyPackage(t, e)
		want := fileGet(fces[i].Loc)
		if !bytes.Equal(zb, want) {
			t.Errorf("change dump package %d differs from the written one", i)
		}
	}

	// A file changed behind the scanner's back (same size): the download
	// breaks, and none of the new bytes goes out (a small file is verified
	// before it is sent; package 0 holds the large file alone).
	e := es[1]
	_, m := checkLazyPackage(t, e)
	victim := strings.TrimPrefix(m[len(m)-1].MD.Path, "/resources/")
	size := m[len(m)-1].MD.Length
	os.WriteFile(filepath.Join(dir, filepath.FromSlash(victim)), bytes.Repeat([]byte("Z"), int(size)), 0o644)
	_, got, err := get(t, e.Loc)
	if err == nil {
		t.Fatalf("download of %s with %s changed completed (%d bytes)", e.Loc, victim, len(got))
	}
	if bytes.Contains(got, []byte("ZZZZZZZZ")) {
		t.Errorf("the changed file's bytes were sent")
	}
}

// TestDumpsOnDemandLargeFileChanged: a large file (streamed, verified at
// its end) changed under the stream breaks the download.
func TestDumpsOnDemandLargeFileChanged(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	out, dir := t.TempDir(), t.TempDir()
	ls, base := newLazyServer(t, out)
	st := openStore(t, "")
	content := strings.Repeat("0123456789abcdef", 40000)
	apply(t, st, dir, rs.Created, "large.bin", content, t0)
	cfg := publish.Config{BaseURL: base, Out: out, Dumps: true, DumpsOnDemand: true, Now: func() time.Time { return t0.Add(time.Minute) }, Logger: quiet, NoCompanions: true,
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
	ls.set(t, cfg)
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	_, es := docEntries(t, base+".resourcesync/default/resourcedump.xml")
	if len(es) != 1 {
		t.Fatalf("%d packages", len(es))
	}
	whole, _ := checkLazyPackage(t, es[0])
	os.WriteFile(filepath.Join(dir, "large.bin"), []byte(strings.Replace(content, "0", "X", -1)), 0o644)
	for _, rng := range []string{"", "bytes=300000-"} {
		var hdr []string
		if rng != "" {
			hdr = []string{"Range", rng}
		}
		_, got, err := get(t, es[0].Loc, hdr...)
		if err == nil {
			t.Errorf("range %q: download completed (%d of %d bytes) with the file changed", rng, len(got), len(whole))
		}
	}
}
