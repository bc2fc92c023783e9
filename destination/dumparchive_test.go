package destination_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source"
)

// TestSyncDumpArchives: a Source whose Capability List names a Resource
// Dump Archive and a Change Dump Archive (written dumps, a new Resource
// Dump at every update) is followed by sync like any other: a first
// baseline from the current Resource Dump, incremental runs after, and a
// new Destination's baseline after the dumps rotated into the archive.
func TestSyncDumpArchives(t *testing.T) {
	dir := t.TempDir()
	for i := range 20 {
		writeFile(t, dir, fmt.Sprintf("f%02d.txt", i), []byte(strings.Repeat(fmt.Sprint(i), 10)))
	}
	ts := startSource(t, dir, nil, func(c *source.Config) {
		c.Dumps, c.Archives, c.DumpInterval, c.ArchivedDumps = true, true, time.Nanosecond, 2
	})
	dest := t.TempDir()
	if sr := one(t, mustSync(t, ts.base, dumpOpts(t, dest))); sr.Failed != 0 || !strings.Contains(sr.Mode, "baseline (dump)") {
		t.Fatalf("first sync: %+v", sr)
	}
	sameTree(t, dir, dest)
	for i := range 3 {
		writeFile(t, dir, fmt.Sprintf("new%d.txt", i), []byte("new "+fmt.Sprint(i)))
		writeFile(t, dir, "f00.txt", []byte("update "+fmt.Sprint(i)))
		ts.update(t)
		if sr := one(t, mustSync(t, ts.base, dumpOpts(t, dest))); sr.Failed != 0 || sr.Mode != "incremental" {
			t.Fatalf("update %d: %+v", i, sr)
		}
		sameTree(t, dir, dest)
	}
	get := func(rel string) string {
		t.Helper()
		resp, err := http.Get(ts.base + rel)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s", rel, resp.Status)
		}
		return string(b)
	}
	cl := get(".resourcesync/default/capabilitylist.xml")
	for _, c := range []string{`capability="resourcedump-archive"`, `capability="changedump-archive"`} {
		if !strings.Contains(cl, c) {
			t.Errorf("the Capability List names no %s:\n%s", c, cl)
		}
	}
	for _, a := range []string{"resourcedump-archive.xml", "changedump-archive.xml"} {
		doc := get(".resourcesync/default/" + a)
		// (No Change List closes within the hour here: the Change Dump
		// Archive is empty; TestDumpArchives in source/publish fills it.)
		if n := strings.Count(doc, "<url>"); a == "resourcedump-archive.xml" && n != 2 {
			t.Errorf("%s with %d entries:\n%s", a, n, doc)
		}
		// Every dump an archive names is served.
		for _, part := range strings.Split(doc, "<loc>")[1:] {
			loc, _, _ := strings.Cut(part, "</loc>")
			rel, ok := strings.CutPrefix(loc, ts.base)
			if !ok {
				t.Fatalf("%s names %s, outside the Source", a, loc)
			}
			if d := get(rel); !strings.Contains(d, `capability="resourcedump"`) && !strings.Contains(d, `capability="changedump"`) {
				t.Errorf("%s: not a dump:\n%s", loc, d)
			}
		}
	}
	fresh := t.TempDir()
	if sr := one(t, mustSync(t, ts.base, dumpOpts(t, fresh))); sr.Failed != 0 || !strings.Contains(sr.Mode, "baseline (dump)") {
		t.Fatalf("fresh sync: %+v", sr)
	}
	sameTree(t, dir, fresh)
}
