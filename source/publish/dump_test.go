package publish_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// checkPackage opens the package an entry of a Resource Dump or Change
// Dump names and checks it: its length and hashes, manifest.xml first and
// identical to the rel="contents" copy, every bitstream's bytes matching
// the manifest's hashes, and safe paths. It returns the manifest.
func checkPackage(t *testing.T, out, base string, e rs.Entry) (rs.Head, []rs.Entry) {
	t.Helper()
	file := func(u string) string {
		rel, ok := strings.CutPrefix(u, base)
		if !ok {
			t.Fatalf("%s outside %s", u, base)
		}
		return filepath.Join(out, filepath.FromSlash(rel))
	}
	zb, err := os.ReadFile(file(e.Loc))
	if err != nil {
		t.Fatal(err)
	}
	s256 := sha256.Sum256(zb)
	if e.MD.Type != "application/zip" || e.MD.Length != int64(len(zb)) || e.MD.Hashes.Get(rs.SHA256) != hex.EncodeToString(s256[:]) {
		t.Errorf("%s: metadata %+v does not match the package", e.Loc, e.MD)
	}
	copyPath := file(e.Link(rs.RelContents))
	h, manifest := decodeFile(t, copyPath)
	copyBytes, _ := os.ReadFile(copyPath)
	zr, err := zip.NewReader(bytes.NewReader(zb), int64(len(zb)))
	if err != nil {
		t.Fatal(err)
	}
	if len(zr.File) == 0 || zr.File[0].Name != "manifest.xml" {
		t.Fatalf("%s: manifest.xml is not first", e.Loc)
	}
	files := map[string]*zip.File{}
	for _, f := range zr.File[1:] {
		if strings.HasPrefix(f.Name, "/") || strings.Contains("/"+f.Name+"/", "/../") || files[f.Name] != nil {
			t.Errorf("%s: unsafe or duplicate name %q", e.Loc, f.Name)
		}
		files[f.Name] = f
	}
	read := func(f *zip.File) []byte {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		var b bytes.Buffer
		if _, err := b.ReadFrom(rc); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	if inner := read(zr.File[0]); !bytes.Equal(inner, copyBytes) {
		t.Errorf("%s: manifest copy differs from the packaged manifest", e.Loc)
	}
	n := 0
	for _, m := range manifest {
		if m.MD.Change == rs.Deleted {
			if m.MD.Path != "" {
				t.Errorf("deleted entry with a path: %+v", m)
			}
			continue
		}
		f := files[strings.TrimPrefix(m.MD.Path, "/")]
		if !strings.HasPrefix(m.MD.Path, "/") || f == nil {
			t.Errorf("%s: manifest path %q not in the package", e.Loc, m.MD.Path)
			continue
		}
		n++
		b := read(f)
		s := sha256.Sum256(b)
		if int64(len(b)) != m.MD.Length || hex.EncodeToString(s[:]) != m.MD.Hashes.Get(rs.SHA256) {
			t.Errorf("%s: bitstream %s does not match its manifest entry", e.Loc, m.MD.Path)
		}
	}
	if n != len(files) {
		t.Errorf("%s: %d bitstreams listed, %d in the package", e.Loc, n, len(files))
	}
	return h, manifest
}

func checkResourceDump(t *testing.T, out, base, set, dir string, want int) {
	t.Helper()
	h, es := decodeFile(t, filepath.Join(out, ".resourcesync", set, "resourcedump.xml"))
	total := 0
	for _, e := range es {
		mh, m := checkPackage(t, out, base, e)
		if !mh.MD.At.Equal(h.MD.At) || mh.MD.Capability != rs.CapResourceDumpManifest {
			t.Errorf("manifest head %+v", mh.MD)
		}
		for _, me := range m {
			rel, _ := strings.CutPrefix(me.MD.Path, "/resources/")
			if !strings.HasSuffix(me.Loc, "/"+rel) {
				t.Errorf("manifest entry loc %s path %s", me.Loc, me.MD.Path)
			}
		}
		total += len(m)
	}
	if total != want {
		t.Errorf("resource dump holds %d resources, want %d", total, want)
	}
}

func TestDumps(t *testing.T) {
	out, dir := t.TempDir(), t.TempDir()
	st := openStore(t, "")
	base := server(t, out)
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	clk := &clock{t: t0}
	cfg := publish.Config{BaseURL: base, Out: out, Dumps: true, Archives: true, MaxEntries: 7, DumpPartBytes: 300, DumpInterval: time.Hour,
		Now: clk.Now, Logger: quiet,
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
	// Period 1: 20 creates of 50 bytes (a package holds 300 bytes: 6 of them).
	for i := range 20 {
		apply(t, st, dir, rs.Created, filepathN(i), strings.Repeat(string(rune('a'+i)), 50), t0.Add(time.Duration(i)*time.Second))
	}
	// Period 2: an update, a delete, an update superseded in the same period.
	t1 := t0.Add(time.Hour)
	apply(t, st, dir, rs.Updated, filepathN(1), "one", t1)
	apply(t, st, dir, rs.Deleted, filepathN(2), "", t1.Add(time.Second))
	apply(t, st, dir, rs.Updated, filepathN(3), "three-a", t1.Add(2*time.Second))
	apply(t, st, dir, rs.Updated, filepathN(3), "three-b", t1.Add(3*time.Second))
	clk.Set(t0.Add(2*time.Hour + time.Minute))
	rep, err := publish.Publish(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	sr := rep.Sets[0]
	if sr.DumpParts != 3 || !sr.ResourceDump {
		t.Errorf("report %+v: want 3 packages", sr)
	}
	mustWalkClean(t, base)
	checkResourceDump(t, out, base, "default", dir, 19)

	// Change dumps: one per closed list; the first period has 20 records,
	// so lists of 7, 7, 6, then the second period.
	h, es := decodeFile(t, filepath.Join(out, ".resourcesync/default/changedump.xml"))
	if len(es) != 4 || sr.ChangeDumps != 4 {
		t.Fatalf("change dump has %d packages (%d written), want 4", len(es), sr.ChangeDumps)
	}
	if !h.MD.From.Equal(es[0].MD.From) {
		t.Errorf("change dump from %s, first package from %s", h.MD.From, es[0].MD.From)
	}
	var kinds []string
	for i, e := range es {
		mh, m := checkPackage(t, out, base, e)
		if !mh.MD.From.Equal(e.MD.From) || !mh.MD.Until.Equal(e.MD.Until) {
			t.Errorf("package %d: manifest %s..%s, entry %s..%s", i, mh.MD.From, mh.MD.Until, e.MD.From, e.MD.Until)
		}
		if i > 0 && !es[i-1].MD.Until.Equal(e.MD.From) {
			t.Errorf("packages %d and %d not contiguous", i-1, i)
		}
		if i == 3 {
			for _, me := range m {
				kinds = append(kinds, string(me.MD.Change)+" "+me.MD.Path)
			}
		}
	}
	// In the last package: file 1's update (current bytes), the delete,
	// and only the later of file 3's updates (the earlier bytes are gone).
	want := []string{"updated /changes/21/f/01.txt", "deleted ", "updated /changes/24/f/03.txt"}
	if strings.Join(kinds, ",") != strings.Join(want, ",") {
		t.Errorf("last package: %q, want %q", kinds, want)
	}
	// Files 1 and 3 of the first packages changed since: left out.
	if sr.SkippedBitstreams != 3+1 {
		t.Errorf("skipped %d bitstreams, want 4", sr.SkippedBitstreams)
	}

	// A file changed behind the scanner's back is left out of a new dump.
	os.WriteFile(filepath.Join(dir, filepathN(5)), []byte(strings.Repeat("Z", 50)), 0o644)
	apply(t, st, dir, rs.Created, "new.txt", "new", t0.Add(2*time.Hour+2*time.Minute))
	clk.Set(t0.Add(3*time.Hour + 30*time.Minute))
	rep, err = publish.Publish(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Sets[0].ResourceDump || rep.Sets[0].ChangeDumps != 1 {
		t.Errorf("second run: %+v", rep.Sets[0])
	}
	checkResourceDump(t, out, base, "default", dir, 19)
	mustWalkClean(t, base)
	gens, _ := os.ReadDir(filepath.Join(out, ".resourcesync/default/resourcedumps"))
	if len(gens) != 2 {
		// With Archives, the previous dump is kept: the Resource Dump
		// Archive names it (TestDumpArchives).
		t.Errorf("%d resource dump generations kept, want 2 (the current and the archived one)", len(gens))
	}
}

func filepathN(i int) string { return "f/" + string(rune('0'+i/10)) + string(rune('0'+i%10)) + ".txt" }
