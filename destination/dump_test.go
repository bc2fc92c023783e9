package destination_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/source"
)

// TestBaselineFromDump: with a Resource Dump on offer, the first baseline
// comes from its packages and no resource is fetched on its own.
func TestBaselineFromDump(t *testing.T) {
	dir := t.TempDir()
	for i := range 300 {
		writeFile(t, dir, fmt.Sprintf("d%d/f%03d.txt", i%7, i), []byte(strings.Repeat(fmt.Sprint(i), 10+i)))
	}
	writeFile(t, dir, "sp ace #1 100%?.txt", []byte("escaped"))
	var log getLog
	ts := startSource(t, dir, log.wrap, func(c *source.Config) { c.Dumps = true; c.DumpPartBytes = 20 << 10 })
	dest := t.TempDir()
	log.start()
	sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	gets := log.stop()
	if sr.Failed != 0 || !strings.Contains(sr.Mode, "baseline (dump)") || sr.Fetched != 301 {
		t.Fatalf("%+v", sr)
	}
	if len(gets) != 0 {
		t.Errorf("%d resources fetched one by one after a dump baseline", len(gets))
	}
	// The summary says what came from the dump and what the Resource List
	// check added, not "fetched 301 ..., skipped 301".
	if want := "301 from the Resource Dump ("; sr.FromDump != 301 || !strings.Contains(sr.Summary(false), want) ||
		!strings.Contains(sr.Summary(false), "then checked against the Resource List: fetched 0 more (0 B), 301 already in sync") {
		t.Errorf("from dump %d, summary %q", sr.FromDump, sr.Summary(false))
	}
	sameTree(t, dir, dest)
	// Incremental from there on.
	writeFile(t, dir, "after.txt", []byte("after the dump"))
	ts.update(t)
	sr = one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	if sr.Mode != "incremental" || sr.Fetched != 1 || sr.Failed != 0 {
		t.Fatalf("after dump: %+v", sr)
	}
	sameTree(t, dir, dest)
}

type member struct {
	name string
	body []byte
	mode fs.FileMode
}

func zipOf(t *testing.T, manifestLocs []string, members []member, deflate bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var man strings.Builder
	man.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcedump-manifest" at="2026-01-01T00:00:00Z"/>
`)
	for i, l := range manifestLocs {
		fmt.Fprintf(&man, `<url><loc>%s</loc><rs:md path="/%s"/></url>`+"\n", l, members[i].name)
	}
	man.WriteString("</urlset>")
	w, _ := zw.Create("manifest.xml")
	w.Write([]byte(man.String()))
	for _, m := range members {
		h := &zip.FileHeader{Name: m.name, Method: zip.Store}
		if deflate {
			h.Method = zip.Deflate
		}
		if m.mode != 0 {
			h.SetMode(m.mode)
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(m.body)
	}
	zw.Close()
	return buf.Bytes()
}

// TestHostileDumps: packages with `../`, absolute paths, symlinks or a zip
// bomb are refused with a specific message; nothing is written outside
// DEST and the resources come from the Resource List instead.
func TestHostileDumps(t *testing.T) {
	files := map[string]string{
		"/capabilitylist.xml": `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="capabilitylist"/>
  <url><loc>{base}resourcelist.xml</loc><rs:md capability="resourcelist"/></url>
  <url><loc>{base}resourcedump.xml</loc><rs:md capability="resourcedump"/></url>
</urlset>`,
		"/resourcelist.xml": resourceList("{base}a.txt"),
		"/a.txt":            "the real a",
	}
	bomb := bytes.Repeat([]byte{0}, 64<<20)
	packages := map[string]struct {
		zip  []byte
		want string
	}{
		"dotdot":   {zipOf(t, []string{"{base}a.txt"}, []member{{name: "../../evil.txt", body: []byte("evil")}}, false), "unsafe path"},
		"absolute": {zipOf(t, []string{"{base}a.txt"}, []member{{name: "/etc/evil.txt", body: []byte("evil")}}, false), "unsafe path"},
		"symlink":  {zipOf(t, []string{"{base}a.txt"}, []member{{name: "link", body: []byte("/etc/passwd"), mode: fs.ModeSymlink | 0o777}}, false), "symbolic link"},
		"bomb":     {zipOf(t, []string{"{base}a.txt"}, []member{{name: "zeros", body: bomb}}, true), "zip bomb"},
	}
	var dumpDoc strings.Builder
	dumpDoc.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcedump" at="2026-01-01T00:00:00Z"/>
`)
	for name, p := range packages {
		sum := sha256.Sum256(p.zip)
		fmt.Fprintf(&dumpDoc, `<url><loc>{base}%s.zip</loc><rs:md type="application/zip" length="%d" hash="sha-256:%s"/></url>`+"\n", name, len(p.zip), hex.EncodeToString(sum[:]))
		files["/"+name+".zip"] = string(p.zip)
	}
	dumpDoc.WriteString("</urlset>")
	files["/resourcedump.xml"] = dumpDoc.String()
	base := staticSource(t, files)
	root := t.TempDir()
	dest := filepath.Join(root, "a", "b", "dest")
	sr := one(t, mustSync(t, base+"capabilitylist.xml", syncOpts(t, dest)))
	if sr.Failed != len(packages) {
		t.Fatalf("%+v", sr)
	}
	for _, f := range sr.Failures {
		name := strings.TrimSuffix(strings.TrimPrefix(f.URI, base), ".zip")
		p, ok := packages[name]
		if !ok {
			t.Errorf("unexpected failure %+v", f)
		} else if !strings.Contains(f.Error, p.want) {
			t.Errorf("%s: %q does not say %q", name, f.Error, p.want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dest, "a.txt")); err != nil || string(b) != "the real a" {
		t.Fatalf("a.txt: %q %v", b, err)
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(p, dest+string(filepath.Separator)) {
			t.Errorf("written outside DEST: %s", p)
		}
		return nil
	})
}

// TestBaselineFromDumpSizes: members around the size at which extraction
// switches from queued bytes (installed by the extractor's goroutines) to
// streaming, empty ones, and many small ones in few directories: all
// installed from the dump, none fetched on its own.
func TestBaselineFromDumpSizes(t *testing.T) {
	dir := t.TempDir()
	sizes := []int{0, 1, 64<<10 - 1, 64 << 10, 64<<10 + 1, 1 << 20, 3<<20 + 7}
	for i, n := range sizes {
		b := bytes.Repeat([]byte{byte('a' + i)}, n)
		if n > 0 {
			b[n-1] = '\n'
		}
		writeFile(t, dir, fmt.Sprintf("sizes/s%d.bin", i), b)
	}
	for i := range 500 {
		writeFile(t, dir, fmt.Sprintf("many/d%d/f%03d.txt", i%3, i), []byte(fmt.Sprintf("small file %d", i)))
	}
	var log getLog
	ts := startSource(t, dir, log.wrap, func(c *source.Config) { c.Dumps = true })
	dest := t.TempDir()
	log.start()
	sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
	gets := log.stop()
	if sr.Failed != 0 || !strings.Contains(sr.Mode, "baseline (dump)") || sr.Fetched != len(sizes)+500 {
		t.Fatalf("%+v", sr)
	}
	if len(gets) != 0 {
		t.Errorf("%d resources fetched one by one after a dump baseline: %v", len(gets), gets)
	}
	sameTree(t, dir, dest)
}

// TestDumpLeavesForeignFiles: a file already in DEST at a member's path,
// which the state does not name, is not replaced by the dump: the list
// pass judges it (adopted with the Source's bytes, kept and reported with
// other bytes).
func TestDumpLeavesForeignFiles(t *testing.T) {
	dir := t.TempDir()
	for i := range 50 {
		writeFile(t, dir, fmt.Sprintf("f%02d.txt", i), []byte(fmt.Sprintf("file %d", i)))
	}
	ts := startSource(t, dir, nil, func(c *source.Config) { c.Dumps = true })
	dest := t.TempDir()
	writeFile(t, dest, "f01.txt", []byte("someone else's"))
	writeFile(t, dest, "f02.txt", []byte("file 2"))
	sr := one(t, mustSync(t, ts.base, dumpOpts(t, dest)))
	if !strings.Contains(sr.Mode, "dump") || sr.Failed != 1 || !strings.Contains(sr.Failures[0].Error, "not written by resourcesync") || sr.Adopted != 1 {
		t.Fatalf("%+v", sr)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "f01.txt")); string(b) != "someone else's" {
		t.Errorf("foreign file replaced: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dest, "f03.txt")); string(b) != "file 3" {
		t.Errorf("f03: %q", b)
	}
}

// TestDumpMemberInstalledByItsReader: into a local DEST, a member is
// installed by the goroutine that read it from the package (its stack
// holds the loop that reads the members: dump's deliver, or each on one
// goroutine), not handed to another: a hand-off per member (or per batch
// of bytes) cost about as much as the install itself.
func TestDumpMemberInstalledByItsReader(t *testing.T) {
	dir := t.TempDir()
	for i := range 60 {
		writeFile(t, dir, fmt.Sprintf("d%d/f%03d.txt", i%5, i), []byte(strings.Repeat(fmt.Sprint(i), 10+i)))
	}
	ts := startSource(t, dir, nil, func(c *source.Config) { c.Dumps = true })
	dest := t.TempDir()
	var mu sync.Mutex
	var handed []string
	destination.SetTestAfterInstall(func(rel string) {
		buf := make([]byte, 64<<10)
		st := string(buf[:runtime.Stack(buf, false)])
		if !strings.Contains(st, "destination/dump.(*Package).deliver") && !strings.Contains(st, "destination/dump.(*Package).each") {
			mu.Lock()
			handed = append(handed, rel)
			mu.Unlock()
		}
	})
	defer destination.SetTestAfterInstall(nil)
	sr := one(t, mustSync(t, ts.base, dumpOpts(t, dest)))
	if sr.FromDump != 60 || sr.Failed != 0 {
		t.Fatalf("%+v", sr)
	}
	if len(handed) > 0 {
		t.Errorf("%d members installed by another goroutine than their reader's, such as %s", len(handed), handed[0])
	}
	sameTree(t, dir, dest)
}
