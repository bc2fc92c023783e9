package destination_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/source"
)

// TestOrphanChild is the process TestOrphanAfterKill kills: it kills
// itself right after it renamed RS_ORPHAN_AT into place and before it
// recorded it. It does nothing unless started by that test.
func TestOrphanChild(t *testing.T) {
	src, dest, at := os.Getenv("RS_ORPHAN_SOURCE"), os.Getenv("RS_ORPHAN_DEST"), os.Getenv("RS_ORPHAN_AT")
	if src == "" {
		t.Skip("child process of TestOrphanAfterKill")
	}
	destination.SetTestAfterInstall(func(rel string) {
		if rel == at {
			p, _ := os.FindProcess(os.Getpid())
			p.Kill()
			select {}
		}
	})
	destination.Sync(context.Background(), src, syncOpts(t, dest))
	fmt.Println("finished without the kill")
}

// TestOrphanAfterKill: a file a killed run renamed into DEST but had not
// recorded yet is the tool's own. When the Source deletes it before the
// next run (it is not in the next Resource List, or a Change List says it
// was deleted), the next run deletes it; when the Source still lists it,
// the next run adopts it without downloading it again. A user's file in
// DEST that the tool never wrote is left alone either way.
func TestOrphanAfterKill(t *testing.T) {
	cases := []struct {
		name string
		// dumps: the first baseline comes from a Resource Dump (the
		// victim is installed from a package).
		dumps bool
		// synced: a complete run first; the killed one is incremental.
		synced bool
		// change makes the Source's change the killed run installs.
		change func(t *testing.T, dir string)
		victim string
		// keep: the Source still lists the victim at the next run.
		keep bool
	}{
		{name: "baseline", victim: "v/gone.txt"},
		{name: "baseline, still listed", victim: "v/gone.txt", keep: true},
		{name: "dump", dumps: true, victim: "v/gone.txt"},
		{name: "incremental, created", synced: true, victim: "v/new.txt", change: func(t *testing.T, dir string) {
			writeFile(t, dir, "v/new.txt", []byte("created after the baseline"))
		}},
		{name: "incremental, updated", synced: true, victim: "v/gone.txt", change: func(t *testing.T, dir string) {
			writeFile(t, dir, "v/gone.txt", []byte("updated after the baseline, longer than before"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for i := range 10 {
				writeFile(t, dir, fmt.Sprintf("f%02d.txt", i), []byte(fmt.Sprintf("file %d", i)))
			}
			writeFile(t, dir, "v/gone.txt", []byte("the victim"))
			var log getLog
			ts := startSource(t, dir, log.wrap, func(cfg *source.Config) { cfg.Dumps = c.dumps })
			dest := t.TempDir()
			mine := []byte("a user's file, never listed by the Source")
			writeFile(t, dest, "mine.note", mine)
			writeFile(t, dest, "v/mine.note", mine)
			if c.synced {
				if sr := one(t, mustSync(t, ts.base, syncOpts(t, dest))); sr.Failed != 0 {
					t.Fatalf("first run: %+v", sr)
				}
			}
			if c.change != nil {
				c.change(t, dir)
				ts.update(t)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestOrphanChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "RS_ORPHAN_SOURCE="+ts.base, "RS_ORPHAN_DEST="+dest, "RS_ORPHAN_AT="+c.victim)
			out, err := cmd.CombinedOutput()
			if err == nil || strings.Contains(string(out), "finished without the kill") {
				t.Fatalf("the run was not killed after installing %s (%v):\n%s", c.victim, err, out)
			}
			if _, err := os.Stat(filepath.Join(dest, filepath.FromSlash(c.victim))); err != nil {
				t.Fatalf("the killed run did not leave %s: %v", c.victim, err)
			}
			if !c.keep {
				if err := os.Remove(filepath.Join(dir, filepath.FromSlash(c.victim))); err != nil {
					t.Fatal(err)
				}
				ts.update(t)
			}
			log.start()
			sr := one(t, mustSync(t, ts.base, syncOpts(t, dest)))
			gets := log.stop()
			if sr.Failed != 0 || sr.Kept != 0 {
				t.Errorf("next run: %+v", sr)
			}
			if c.keep && gets[c.victim] != 0 {
				t.Errorf("%s, installed by the killed run, was downloaded again", c.victim)
			}
			for _, p := range []string{"mine.note", "v/mine.note"} {
				if b, err := os.ReadFile(filepath.Join(dest, filepath.FromSlash(p))); err != nil || !bytes.Equal(b, mine) {
					t.Fatalf("the user's file %s was changed or removed: %q %v", p, b, err)
				}
				os.Remove(filepath.Join(dest, filepath.FromSlash(p)))
			}
			sameTree(t, dir, dest)
			if n, err := destination.PendingIntents(dest); err != nil || n != 0 {
				t.Errorf("%d intents left after a finished run (%v)", n, err)
			}
			// The state owns what it holds: a later deletion at the Source
			// removes the file like any other.
			if c.keep {
				os.Remove(filepath.Join(dir, filepath.FromSlash(c.victim)))
				ts.update(t)
				if sr := one(t, mustSync(t, ts.base, syncOpts(t, dest))); sr.Failed != 0 || sr.Kept != 0 || sr.Deleted != 1 {
					t.Errorf("deletion after adoption: %+v", sr)
				}
				sameTree(t, dir, dest)
			}
		})
	}
}

// TestUserFileSurvivesCrash: a user's file at a path the Source lists,
// with other bytes, is refused (ErrNotOwned), not overwritten, by the run
// after a killed one: the killed run's intents name every file it may
// have installed, so no other file is taken for one it left (as the guess
// for states of versions without intents did: any such file was
// overwritten after a crash).
func TestUserFileSurvivesCrash(t *testing.T) {
	dir := t.TempDir()
	for i := range 10 {
		writeFile(t, dir, fmt.Sprintf("f%02d.txt", i), []byte(fmt.Sprintf("file %d", i)))
	}
	writeFile(t, dir, "v/gone.txt", []byte("the victim"))
	writeFile(t, dir, "u/clash.txt", []byte("the Source's bytes"))
	ts := startSource(t, dir, nil, nil)
	dest := t.TempDir()
	mine := []byte("the user's own bytes at a path the Source lists")
	writeFile(t, dest, "u/clash.txt", mine)
	cmd := exec.Command(os.Args[0], "-test.run=^TestOrphanChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "RS_ORPHAN_SOURCE="+ts.base, "RS_ORPHAN_DEST="+dest, "RS_ORPHAN_AT=v/gone.txt")
	out, err := cmd.CombinedOutput()
	if err == nil || strings.Contains(string(out), "finished without the kill") {
		t.Fatalf("the run was not killed (%v):\n%s", err, out)
	}
	rep, err := destination.Sync(context.Background(), ts.base, syncOpts(t, dest))
	if err != nil {
		t.Fatal(err)
	}
	sr := one(t, rep)
	if b, err := os.ReadFile(filepath.Join(dest, "u", "clash.txt")); err != nil || !bytes.Equal(b, mine) {
		t.Fatalf("the user's file was overwritten after the crash: %q %v (%+v)", b, err, sr)
	}
	if sr.Failed != 1 || len(sr.Failures) != 1 || !strings.Contains(sr.Failures[0].Error, "not overwritten") {
		t.Fatalf("want one refusal of u/clash.txt: %+v", sr)
	}
}

// TestIntentEmptyDirsRemoved: a run killed after it made the directories
// of a file it was about to install, and before the install (its
// temporary file is removed at the next start), leaves empty
// directories; the next run removes them with the intent (TestModel seed
// 15 found one left). A user's empty directory elsewhere stays.
func TestIntentEmptyDirsRemoved(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "f.txt", []byte("a file"))
	ts := startSource(t, dir, nil, nil)
	dest := t.TempDir()
	if sr := one(t, mustSync(t, ts.base, syncOpts(t, dest))); sr.Failed != 0 {
		t.Fatalf("first run: %+v", sr)
	}
	if err := os.MkdirAll(filepath.Join(dest, "made", "by", "run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dest, "users", "own"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := destination.LeaveTestIntent(dest, "made/by/run/big.bin", ts.base+"made/by/run/big.bin", "default"); err != nil {
		t.Fatal(err)
	}
	if sr := one(t, mustSync(t, ts.base, syncOpts(t, dest))); sr.Failed != 0 {
		t.Fatalf("next run: %+v", sr)
	}
	if _, err := os.Stat(filepath.Join(dest, "made")); err == nil {
		t.Error("the killed run's empty directories are left in DEST")
	}
	if _, err := os.Stat(filepath.Join(dest, "users", "own")); err != nil {
		t.Errorf("a user's empty directory was removed: %v", err)
	}
	if n, err := destination.PendingIntents(dest); err != nil || n != 0 {
		t.Errorf("%d intents left (%v)", n, err)
	}
}

// TestKilledDeletionEmptyDirsRemoved: a run killed while it removed the
// directories a deletion emptied (the file and the deepest directory
// gone, its parents not, the deletion not yet recorded) leaves empty
// directories; the next run, finding the file gone, removes them
// (TestModel seed 16 found one left).
func TestKilledDeletionEmptyDirsRemoved(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "f.txt", []byte("a file"))
	writeFile(t, dir, "x/y/z/gone.txt", []byte("deleted at the Source"))
	ts := startSource(t, dir, nil, nil)
	dest := t.TempDir()
	if sr := one(t, mustSync(t, ts.base, syncOpts(t, dest))); sr.Failed != 0 || sr.Fetched != 2 {
		t.Fatalf("first run: %+v", sr)
	}
	if err := os.RemoveAll(filepath.Join(dir, "x")); err != nil {
		t.Fatal(err)
	}
	ts.update(t)
	// What the killed run did: the file and z removed, y and x left.
	if err := os.RemoveAll(filepath.Join(dest, "x", "y", "z")); err != nil {
		t.Fatal(err)
	}
	if sr := one(t, mustSync(t, ts.base, syncOpts(t, dest))); sr.Failed != 0 {
		t.Fatalf("next run: %+v", sr)
	}
	if _, err := os.Stat(filepath.Join(dest, "x")); err == nil {
		t.Error("the directories the killed deletion emptied are left in DEST")
	}
	sameTree(t, dir, dest)
}
