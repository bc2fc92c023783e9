package destination_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/testing/casefoldfs"
)

// TestFATDeletion: on a FAT DEST, whose file system keeps mtimes to 2 s
// where the Source's lastmods have nanoseconds, a file the Source deletes
// is deleted (it was kept as "changed here"), and a run with nothing new
// fetches nothing again. The FAT file system is mounted below DEST (the
// state cannot live on it): the granularity is probed there, as Open
// probes DEST's own temporary directory.
func TestFATDeletion(t *testing.T) {
	dest := t.TempDir()
	d := filepath.Join(dest, "d")
	os.Mkdir(d, 0o755)
	casefoldfs.MountAt(t, d)
	g, err := destination.ProbeMTimeGranularity(d)
	if err != nil || g != 2*time.Second {
		t.Fatalf("FAT mount: mtime granularity %v %v, want 2s", g, err)
	}
	if ents, _ := os.ReadDir(d); len(ents) != 0 {
		t.Fatalf("the probe left %v", ents)
	}
	dir := t.TempDir()
	writeFile(t, dir, "d/a.txt", []byte("bytes"))
	writeFile(t, dir, "d/b.txt", []byte("more bytes"))
	writeFile(t, dir, "ok.txt", []byte("fine"))
	oddMTimes(t, dir, "d/a.txt", "d/b.txt", "ok.txt")
	ts := startSource(t, dir, nil, nil)
	opts := func() destination.Options {
		o := syncOpts(t, dest)
		o.MTimeGranularity = func(string) (time.Duration, error) { return destination.ProbeMTimeGranularity(d) }
		o.Events = func(ev destination.Event) {
			if ev.Path != "" {
				t.Logf("event %s %s %s %s", ev.Kind, ev.Path, ev.Message, ev.Error)
			}
		}
		return o
	}
	if sr := one(t, mustSync(t, ts.base, opts())); sr.Fetched != 3 || sr.Failed != 0 {
		t.Fatalf("baseline: %s", sr.Summary(false))
	}
	o := opts()
	o.Mode = destination.ModeBaseline // every file is looked at
	if sr := one(t, mustSync(t, ts.base, o)); sr.Fetched != 0 || sr.Skipped != 3 || sr.Adopted != 0 || sr.Failed != 0 {
		t.Fatalf("nothing changed, yet: %s", sr.Summary(false))
	}
	os.Remove(filepath.Join(dir, "d", "a.txt"))
	ts.update(t)
	if sr := one(t, mustSync(t, ts.base, opts())); sr.Deleted != 1 || sr.Kept != 0 || sr.Fetched != 0 {
		t.Fatalf("deletion on FAT: %s", sr.Summary(false))
	}
	if _, err := os.Lstat(filepath.Join(d, "a.txt")); err == nil {
		t.Fatal("d/a.txt is still in DEST")
	}
	// A file changed here is still kept.
	later := time.Now().Add(-time.Hour)
	os.Chtimes(filepath.Join(d, "b.txt"), later, later)
	os.Remove(filepath.Join(dir, "d", "b.txt"))
	ts.update(t)
	if sr := one(t, mustSync(t, ts.base, opts())); sr.Deleted != 0 || sr.Kept != 1 {
		t.Fatalf("a file changed here: %s", sr.Summary(false))
	}
}

// oddMTimes gives the Source's files mtimes (its lastmods) with odd
// seconds and nanoseconds, which a coarse file system rounds.
func oddMTimes(t *testing.T, dir string, rels ...string) {
	t.Helper()
	for i, rel := range rels {
		mt := time.Unix(1_700_000_001+int64(2*i), 123_456_789)
		if err := os.Chtimes(filepath.Join(dir, filepath.FromSlash(rel)), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCoarseMTimeDeletion simulates, on any file system, one that keeps
// mtimes to 2 s: each installed file's mtime is rounded down right after
// its install. With that granularity (as the probe would find it on FAT),
// a file the Source deletes is deleted and an unchanged one is not
// fetched again; taken for exact, the rounded file looks changed here.
func TestCoarseMTimeDeletion(t *testing.T) {
	for _, grain := range []time.Duration{2 * time.Second, 0} {
		t.Run(grain.String(), func(t *testing.T) {
			dest := t.TempDir()
			destination.SetTestAfterInstall(func(rel string) {
				p := filepath.Join(dest, filepath.FromSlash(rel))
				fi, err := os.Lstat(p)
				if err != nil {
					t.Error(err)
					return
				}
				mt := fi.ModTime().Truncate(2 * time.Second)
				if mt.Equal(fi.ModTime()) {
					t.Errorf("%s: mtime %v is whole already: nothing simulated", rel, mt)
				}
				if err := os.Chtimes(p, mt, mt); err != nil {
					t.Error(err)
				}
			})
			t.Cleanup(func() { destination.SetTestAfterInstall(nil) })
			dir := t.TempDir()
			writeFile(t, dir, "a.txt", []byte("bytes"))
			writeFile(t, dir, "b.txt", []byte("more bytes"))
			oddMTimes(t, dir, "a.txt", "b.txt")
			ts := startSource(t, dir, nil, nil)
			probed := 0
			opts := func() destination.Options {
				o := syncOpts(t, dest)
				o.MTimeGranularity = func(string) (time.Duration, error) { probed++; return grain, nil }
				return o
			}
			if sr := one(t, mustSync(t, ts.base, opts())); sr.Fetched != 2 || sr.Failed != 0 {
				t.Fatalf("baseline: %s", sr.Summary(false))
			}
			if probed != 1 {
				t.Errorf("probed %d times in one run", probed)
			}
			if grain == 0 {
				// Taken for exact, each rounded file's mtime is not the
				// one its record holds: the file looks changed here,
				// and is kept when the Source deletes it.
				os.Remove(filepath.Join(dir, "a.txt"))
				ts.update(t)
				if sr := one(t, mustSync(t, ts.base, opts())); sr.Deleted != 0 || sr.Kept != 1 {
					t.Fatalf("exact mtimes: the simulation did not bite: %s", sr.Summary(false))
				}
				return
			}
			o := opts()
			o.Mode = destination.ModeBaseline // every file is looked at
			if sr := one(t, mustSync(t, ts.base, o)); sr.Fetched != 0 || sr.Skipped != 2 || sr.Adopted != 0 {
				t.Fatalf("nothing changed: %s", sr.Summary(false))
			}
			os.Remove(filepath.Join(dir, "a.txt"))
			ts.update(t)
			if sr := one(t, mustSync(t, ts.base, opts())); sr.Deleted != 1 || sr.Kept != 0 {
				t.Fatalf("deletion: %s", sr.Summary(false))
			}
		})
	}
}
