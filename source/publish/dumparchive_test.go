package publish_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/xsdtest"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// TestDumpArchives: with Dumps and Archives, the Capability List names a
// Resource Dump Archive and a Change Dump Archive (ResourceSync Archives
// 0.9.1). The Resource Dump Archive names the previous
// ArchivedResourceDumps (here 2) Resource Dumps (at and completed), each still
// complete (its packages kept), older generations removed; the Change Dump
// Archive names one Change Dump per closed Change List, chronological,
// with from and until. Every document validates with xmllint against the
// ResourceSync schemas, and the validator's walk finds no error.
func TestDumpArchives(t *testing.T) {
	dir, out := t.TempDir(), t.TempDir()
	st := openStore(t, "")
	base := server(t, out)
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	clk := &clock{t: t0}
	cfg := publish.Config{BaseURL: base, Out: out, Dumps: true, Archives: true, ArchivedResourceDumps: 2, DumpInterval: time.Hour,
		Now: clk.Now, Logger: quiet,
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
	doc := func(rel string) string { return filepath.Join(out, ".resourcesync", "default", rel) }
	file := func(u string) string {
		rel, ok := strings.CutPrefix(u, base)
		if !ok {
			t.Fatalf("%s outside %s", u, base)
		}
		return filepath.Join(out, filepath.FromSlash(rel))
	}
	apply(t, st, dir, rs.Created, "a.txt", "a0", t0)
	apply(t, st, dir, rs.Created, "b.txt", "b0", t0.Add(time.Second))
	var gens []string // Resource Dump at of each run, oldest first
	for i := range 4 {
		now := t0.Add(time.Duration(2*i)*time.Hour + time.Minute)
		if i > 0 {
			apply(t, st, dir, rs.Updated, "a.txt", strings.Repeat("a", i+1), now.Add(-time.Minute))
		}
		clk.Set(now)
		if _, err := publish.Publish(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		h, _ := decodeFile(t, doc("resourcedump.xml"))
		gens = append(gens, h.MD.At.String())
		if h.Link(rs.RelArchives) != base+".resourcesync/default/resourcedump-archive.xml" {
			t.Errorf("run %d: resourcedump.xml archives link %q", i, h.Link(rs.RelArchives))
		}
		// The archive: the previous dumps, at most 2, oldest first.
		ah, ae := decodeFile(t, doc("resourcedump-archive.xml"))
		if ah.MD.Capability != rs.CapResourceDumpArchive || ah.Link(rs.RelUp) != base+".resourcesync/default/capabilitylist.xml" {
			t.Errorf("run %d: archive head %+v", i, ah)
		}
		want := gens[max(0, len(gens)-3) : len(gens)-1]
		if len(ae) != len(want) {
			t.Fatalf("run %d: resource dump archive has %d entries, want %d", i, len(ae), len(want))
		}
		for j, e := range ae {
			if e.MD.At.String() != want[j] || e.MD.Completed.IsZero() || e.MD.Completed.Before(e.MD.At) {
				t.Errorf("run %d: archive entry %d at %s completed %s, want at %s", i, j, e.MD.At, e.MD.Completed, want[j])
			}
			dh, de := decodeFile(t, file(e.Loc))
			if dh.MD.Capability != rs.CapResourceDump || dh.MD.At.String() != want[j] || len(de) == 0 {
				t.Errorf("run %d: archived dump %s: %+v, %d packages", i, e.Loc, dh.MD, len(de))
			}
			for _, pe := range de {
				checkPackage(t, out, base, pe)
			}
		}
		gd, err := filepath.Glob(doc("resourcedumps/2*"))
		if err != nil || len(gd) != len(want)+1 {
			t.Errorf("run %d: generation directories %q, want %d", i, gd, len(want)+1)
		}
		mustWalkClean(t, base)
	}
	// Change Dump Archive: one single-package Change Dump per closed list.
	_, cl := decodeFile(t, doc("changelist-archive.xml"))
	ah, ae := decodeFile(t, doc("changedump-archive.xml"))
	if ah.MD.Capability != rs.CapChangeDumpArchive || len(ae) != len(cl) || len(ae) < 2 {
		t.Fatalf("change dump archive: %+v with %d entries, %d closed change lists", ah.MD, len(ae), len(cl))
	}
	for j, e := range ae {
		if !e.MD.From.Equal(cl[j].MD.From) || !e.MD.Until.Equal(cl[j].MD.Until) {
			t.Errorf("change dump archive entry %d: from %s until %s, change list %s..%s", j, e.MD.From, e.MD.Until, cl[j].MD.From, cl[j].MD.Until)
		}
		dh, de := decodeFile(t, file(e.Loc))
		if dh.MD.Capability != rs.CapChangeDump || !dh.MD.From.Equal(e.MD.From) || !dh.MD.Until.Equal(e.MD.Until) || len(de) != 1 {
			t.Fatalf("archived change dump %s: %+v, %d packages", e.Loc, dh.MD, len(de))
		}
		checkPackage(t, out, base, de[0])
	}
	_, caps := decodeFile(t, doc("capabilitylist.xml"))
	got := map[rs.Capability]string{}
	for _, e := range caps {
		got[e.MD.Capability] = e.Loc
	}
	for c, rel := range map[rs.Capability]string{rs.CapResourceDumpArchive: "resourcedump-archive.xml", rs.CapChangeDumpArchive: "changedump-archive.xml"} {
		if got[c] != base+".resourcesync/default/"+rel {
			t.Errorf("capability list: %s is %q", c, got[c])
		}
	}
	// The schemas accept every archive and dump document (not the lists
	// and manifests: their type="text/plain; charset=utf-8" is a known
	// exception of the schemas, rs.TestXSDExceptions).
	v := xsdtest.New(t, "../..")
	docs := map[string][]byte{}
	filepath.WalkDir(filepath.Join(out, ".resourcesync"), func(p string, d fs.DirEntry, err error) error {
		n := filepath.Base(p)
		if err == nil && !d.IsDir() && (strings.HasSuffix(n, "dump.xml") || strings.HasSuffix(n, "-archive.xml") || n == "capabilitylist.xml") {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			docs[p] = b
		}
		return nil
	})
	v.MustValidate(t, docs)

	// Under another base URL the archived Change Dumps name the new URLs.
	cfg.BaseURL = "http://other.example/"
	clk.Set(clk.Now().Add(time.Minute))
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if _, rd := decodeFile(t, doc("resourcedump-archive.xml")); len(rd) != 0 {
		t.Errorf("the Resource Dump Archive names %d dumps of the old base URL", len(rd))
	}
	for _, e := range ae {
		b, err := os.ReadFile(file(e.Loc))
		if err != nil || strings.Contains(string(b), base) || !strings.Contains(string(b), cfg.BaseURL) {
			t.Errorf("%s after a new base URL (%v):\n%s", e.Loc, err, b)
		}
	}
}

// TestDumpArchivesOff: dumps produced on demand are not archived (an
// earlier plan's packages are 404 once the collection changed), and
// ArchivedResourceDumps < 0 turns the Resource Dump Archive off: the
// Capability List names only the archives that are written.
func TestDumpArchivesOff(t *testing.T) {
	for _, tt := range []struct {
		name           string
		onDemand       bool
		archived       int
		wantRD, wantCD bool
	}{
		{"on demand", true, 0, false, false},
		{"no resource dumps kept", false, -1, false, true},
		{"default", false, 0, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, out := t.TempDir(), t.TempDir()
			st := openStore(t, "")
			base := server(t, out)
			t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
			cfg := publish.Config{BaseURL: base, Out: out, Dumps: true, DumpsOnDemand: tt.onDemand, Archives: true,
				ArchivedResourceDumps: tt.archived, Now: func() time.Time { return t0.Add(time.Minute) }, Logger: quiet,
				Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
			apply(t, st, dir, rs.Created, "a.txt", "a0", t0)
			if _, err := publish.Publish(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			_, caps := decodeFile(t, filepath.Join(out, ".resourcesync/default/capabilitylist.xml"))
			got := map[rs.Capability]bool{}
			for _, e := range caps {
				got[e.MD.Capability] = true
			}
			for _, c := range []struct {
				cap  rs.Capability
				file string
				want bool
			}{{rs.CapResourceDumpArchive, "resourcedump-archive.xml", tt.wantRD}, {rs.CapChangeDumpArchive, "changedump-archive.xml", tt.wantCD}} {
				written := exists(filepath.Join(out, ".resourcesync/default", c.file))
				if got[c.cap] != c.want || written != c.want {
					t.Errorf("%s: listed %v, written %v; want %v", c.cap, got[c.cap], written, c.want)
				}
			}
			mustWalkClean(t, base)
		})
	}
}
