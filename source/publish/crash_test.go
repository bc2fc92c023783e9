package publish_test

import (
	"archive/zip"
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/validate"
)

const (
	crashStateEnv = "RESOURCESYNC_PUBLISH_CRASH_STATE"
	crashOutEnv   = "RESOURCESYNC_PUBLISH_CRASH_OUT"
	crashBaseEnv  = "RESOURCESYNC_PUBLISH_CRASH_BASE"
	crashNowEnv   = "RESOURCESYNC_PUBLISH_CRASH_NOW"
	crashDirEnv   = "RESOURCESYNC_PUBLISH_CRASH_DIR"
)

// crashConfig is the configuration of every run of TestCrash.
func crashConfig(st store.Store, out, base, dir string, now time.Time) publish.Config {
	return publish.Config{BaseURL: base, Out: out, MaxEntries: 1000, Archives: true, ArchivedResourceLists: 2, Dumps: true, DumpPartBytes: 16 << 10,
		// A new Resource Dump every other run, so that the Resource Dump
		// Archive changes while runs are killed.
		DumpInterval: 90 * time.Minute, ArchivedResourceDumps: 2,
		Logger: quiet, Now: func() time.Time { return now },
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "r/"}}}
}

// TestCrashChild is the helper process of TestCrash: it publishes once,
// printing "start" before and "done" after.
func TestCrashChild(t *testing.T) {
	state := os.Getenv(crashStateEnv)
	if state == "" {
		t.Skip("helper process for TestCrash")
	}
	now, err := time.Parse(time.RFC3339Nano, os.Getenv(crashNowEnv))
	if err != nil {
		fmt.Println(err)
		os.Exit(2)
	}
	db, err := bolt.Open(state, &bolt.Options{LockTimeout: 10 * time.Second})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	fmt.Println("start")
	if _, err := publish.Publish(context.Background(), crashConfig(db, os.Getenv(crashOutEnv), os.Getenv(crashBaseEnv), os.Getenv(crashDirEnv), now)); err != nil {
		fmt.Println("publish:", err)
		os.Exit(3)
	}
	db.Close()
	fmt.Println("done")
}

// TestCrash kills publishing processes at random moments and checks that
// the published tree never names a missing or incomplete document, and
// that a normal run afterwards leaves a valid tree.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kill -9 trials")
	}
	dir, out, coll := t.TempDir(), t.TempDir(), t.TempDir()
	state := filepath.Join(dir, "state.db")
	base := server(t, out)
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	period := time.Hour
	withStore := func(fn func(*bolt.DB)) {
		db, err := bolt.Open(state, &bolt.Options{NoSync: true, LockTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		fn(db)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	withStore(func(db *bolt.DB) {
		var cs []store.Change
		for i := range 30000 {
			r := writeVersion(t, coll, fmt.Sprintf("d%02d/f%05d", i%100, i), 0, t0)
			cs = append(cs, store.Change{Kind: rs.Created, Time: t0, Resource: r})
		}
		if _, _, err := db.Apply(context.Background(), store.Batch{Changes: cs}); err != nil {
			t.Fatal(err)
		}
	})

	// child runs one publish and kills it after delay (never if delay < 0);
	// it reports whether the run completed, and how long it ran.
	child := func(now time.Time, delay time.Duration) (bool, time.Duration) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.v")
		cmd.Env = append(os.Environ(), crashStateEnv+"="+state, crashOutEnv+"="+out, crashBaseEnv+"="+base, crashDirEnv+"="+coll,
			crashNowEnv+"="+now.Format(time.RFC3339Nano))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		var lines []string
		var mu sync.Mutex
		started := make(chan struct{})
		go func() {
			for sc.Scan() {
				mu.Lock()
				lines = append(lines, sc.Text())
				mu.Unlock()
				if sc.Text() == "start" {
					close(started)
				}
			}
		}()
		select {
		case <-started:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatal("child did not start")
		}
		began := time.Now()
		if delay >= 0 {
			time.Sleep(delay)
			cmd.Process.Kill()
		}
		err = cmd.Wait()
		ran := time.Since(began)
		mu.Lock()
		defer mu.Unlock()
		done := false
		for _, l := range lines {
			done = done || l == "done"
		}
		for _, l := range lines {
			if strings.HasPrefix(l, "publish:") || strings.HasPrefix(l, "open:") {
				t.Errorf("child failed: %s", l)
			}
		}
		if err != nil && delay < 0 {
			t.Fatalf("child failed: %v\n%s", err, strings.Join(lines, "\n"))
		}
		return done, ran
	}

	// A full run, timed, to choose kill moments within it.
	_, full := child(t0.Add(period/2), -1)
	t.Logf("uninterrupted first publish of 30,000 resources in a child: %v", full)

	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))
	// Trials go on until 10 runs were killed before they completed.
	completed, killed, trials := 0, 0, 0
	for i := 0; killed < 10 && i < 40; i++ {
		trials++
		// Changes for the next run: updates and deletes one period later,
		// so that Change Lists close and the Resource List changes; every
		// other run changes a handful, so that only some parts are
		// rewritten.
		now := t0.Add(time.Duration(i+1) * period)
		rate := 20
		if i%2 == 1 {
			rate = 3000
		}
		withStore(func(db *bolt.DB) {
			var cs []store.Change
			seen := map[string]bool{}
			for r, err := range db.Resources(context.Background()) {
				if err != nil {
					t.Fatal(err)
				}
				if rng.IntN(rate) != 0 || seen[r.Path] {
					continue
				}
				seen[r.Path] = true
				kind := rs.Updated
				if rng.IntN(4) == 0 {
					kind = rs.Deleted
					os.Remove(filepath.Join(coll, filepath.FromSlash(r.Path)))
				} else {
					r = writeVersion(t, coll, r.Path, i+1, now)
				}
				cs = append(cs, store.Change{Kind: kind, Time: now.Add(-time.Minute), Resource: r})
			}
			if _, _, err := db.Apply(context.Background(), store.Batch{Changes: cs}); err != nil {
				t.Fatal(err)
			}
		})
		delay := time.Duration(rng.Int64N(int64(full)))
		done, ran := child(now, delay)
		if done {
			completed++
			full = ran // later runs have less to do than the first
		} else {
			killed++
		}
		var temps int
		filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
			if err == nil && strings.HasPrefix(d.Name(), ".tmp-") {
				temps++
			}
			return nil
		})
		var fetch, other []string
		for _, p := range walkProblems(t, base) {
			if p.Rule == "RS-FETCH" || p.Rule == "RS-XML" {
				fetch = append(fetch, p.String())
			} else if p.Severity == rs.SevError {
				other = append(other, p.String())
			}
		}
		t.Logf("trial %d: killed after %v (done=%v, %d temporary files left); %d fetch/XML problems, %d other errors",
			i, delay, done, temps, len(fetch), len(other))
		for _, p := range fetch {
			t.Errorf("trial %d: %s", i, p)
		}
		checkDumps(t, out, base, false)
		for _, p := range other {
			t.Logf("  %s", p)
		}
	}
	t.Logf("%d trials: %d killed while publishing, %d completed before the kill", trials, killed, completed)
	if killed < 10 {
		t.Errorf("only %d runs killed while publishing", killed)
	}

	// A normal run repairs everything.
	withStore(func(db *bolt.DB) {
		if _, err := publish.Publish(context.Background(), crashConfig(db, out, base, coll, t0.Add(time.Duration(trials+1)*period+time.Minute))); err != nil {
			t.Fatal(err)
		}
	})
	mustWalkClean(t, base)
	checkDumps(t, out, base, true)
	var temps []string
	filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".tmp-") {
			temps = append(temps, p)
		}
		return nil
	})
	if len(temps) > 0 {
		t.Errorf("temporary files left: %v", temps)
	}
}

// walkProblems walks the tree and returns every problem.
func walkProblems(t *testing.T, base string) []validate.Problem {
	client := slowClient(t)
	var mu sync.Mutex
	var ps []validate.Problem
	_, err := validate.Walk(context.Background(), client, base+".well-known/resourcesync", validate.Options{MaxDocs: 5000, Timeout: 5 * time.Minute},
		func(p validate.Problem) { mu.Lock(); ps = append(ps, p); mu.Unlock() })
	if err != nil {
		// The start itself could not be fetched: only acceptable before
		// the first run ever completed, which TestCrash makes sure of.
		ps = append(ps, validate.Problem{Rule: "RS-FETCH", Severity: rs.SevError, Message: err.Error()})
	}
	return ps
}

// writeVersion writes version v of the file at path under dir and returns
// its inventory record.
func writeVersion(t testing.TB, dir, path string, v int, at time.Time) store.Resource {
	b := []byte(fmt.Sprintf("resource %s version %d\n", path, v))
	f := filepath.Join(dir, filepath.FromSlash(path))
	os.MkdirAll(filepath.Dir(f), 0o755)
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return resource(path, b, at)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// checkDumps checks the packages the dumps name, which the walk does not
// open: each must exist and be a complete ZIP with manifest.xml first, and
// its manifest copy must exist; full also checks every bitstream. So are
// those of the dumps the dump archives name.
func checkDumps(t *testing.T, out, base string, full bool) {
	t.Helper()
	docs := []string{filepath.Join(out, ".resourcesync/default/resourcedump.xml"), filepath.Join(out, ".resourcesync/default/changedump.xml")}
	// The dumps the Resource Dump Archive and the Change Dump Archive name.
	for _, a := range []string{"resourcedump-archive.xml", "changedump-archive.xml"} {
		f := filepath.Join(out, ".resourcesync/default", a)
		if !exists(f) {
			continue
		}
		_, es := decodeFile(t, f)
		for _, e := range es {
			d := filepath.Join(out, filepath.FromSlash(strings.TrimPrefix(e.Loc, base)))
			if !exists(d) {
				t.Errorf("%s names %s: missing", a, e.Loc)
				continue
			}
			docs = append(docs, d)
		}
	}
	for _, f := range docs {
		if !exists(f) {
			continue
		}
		_, es := decodeFile(t, f)
		for _, e := range es {
			if full {
				checkPackage(t, out, base, e)
				continue
			}
			zf := filepath.Join(out, filepath.FromSlash(strings.TrimPrefix(e.Loc, base)))
			zr, err := zip.OpenReader(zf)
			if err != nil {
				t.Errorf("%s: %v", e.Loc, err)
				continue
			}
			if len(zr.File) == 0 || zr.File[0].Name != "manifest.xml" {
				t.Errorf("%s: manifest.xml not first", e.Loc)
			}
			zr.Close()
			if fi, err := os.Stat(zf); err != nil || fi.Size() != e.MD.Length {
				t.Errorf("%s: length %d in the dump, file: %v", e.Loc, e.MD.Length, err)
			}
			if m := filepath.Join(out, filepath.FromSlash(strings.TrimPrefix(e.Link(rs.RelContents), base))); !exists(m) {
				t.Errorf("%s: manifest copy missing", e.Loc)
			}
		}
	}
}
