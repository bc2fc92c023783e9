package harvest

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/oaitest"
	"github.com/resourcesync-go/resourcesync/oai"
)

// TestKill9: a harvest killed (SIGKILL) in the middle of a list resumes
// in a new process from its last committed page: every record arrives,
// every path reaches Committed, no staged file is left behind.
func TestKill9(t *testing.T) {
	if os.Getenv("HARVEST_KILL_CHILD") != "" {
		killChild()
		return
	}
	r := newRig(t, oaitest.Options{PageSize: 10}, nil)
	r.h.Close()
	r.s.Generate(60)
	blocked, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	n := 0
	r.s.OnRequest(func(verb string, q url.Values) {
		if verb == oai.ListRecords {
			if n++; n == 4 {
				once.Do(func() { close(blocked); <-release })
			}
		}
	})
	defer close(release)
	log := filepath.Join(t.TempDir(), "committed")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKill9$")
	cmd.Env = append(os.Environ(), "HARVEST_KILL_CHILD=1", "HARVEST_BATCH_PAGES=1", "HARVEST_ENDPOINT="+r.cfg.Endpoint,
		"HARVEST_DIR="+r.cfg.Dir, "HARVEST_STATE="+r.cfg.State, "HARVEST_LOG="+log)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	<-blocked
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// The child's committed paths.
	f, err := os.Open(log)
	if err != nil {
		t.Fatalf("the child committed nothing: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(f)
	child := 0
	for sc.Scan() {
		r.commits = append(r.commits, strings.Fields(sc.Text()))
		child++
	}
	f.Close()
	if child < 2 {
		t.Fatalf("the child committed %d pages before it was killed", child)
	}
	r.open()
	st := r.harvest()
	if st.Written+10*child < 60 {
		t.Errorf("after the restart: %+v (the child committed %d pages)", st, child)
	}
	r.check(oai.DCPrefix)
	if c := r.committed(); len(c) != 60 {
		t.Errorf("%d paths committed, want 60", len(c))
	}
	filepath.WalkDir(r.cfg.Dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), tmpPrefix) {
			t.Errorf("staged file left: %s", p)
		}
		return err
	})
}

// TestKillAfterRenames: a harvester killed after a page's files are in
// place but before its state moved past the page lists the page again
// after the restart and finds its files unchanged; the page's paths must
// still reach Committed (the journal), from the state.
func TestKillAfterRenames(t *testing.T) {
	if os.Getenv("HARVEST_KILL_CHILD") != "" {
		killChild()
		return
	}
	r := newRig(t, oaitest.Options{PageSize: 10}, nil)
	r.h.Close()
	r.s.Generate(60)
	log := filepath.Join(t.TempDir(), "committed")
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillAfterRenames$")
	cmd.Env = append(os.Environ(), "HARVEST_KILL_CHILD=1", "HARVEST_BATCH_PAGES=1", "HARVEST_KILL_AFTER_RENAMES=3", "HARVEST_ENDPOINT="+r.cfg.Endpoint,
		"HARVEST_DIR="+r.cfg.Dir, "HARVEST_STATE="+r.cfg.State, "HARVEST_LOG="+log)
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), "killed after the renames of page 3") {
		t.Fatalf("the child was not stopped in the window:\n%s", out)
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatalf("the child committed nothing: %v\n%s", err, out)
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		r.commits = append(r.commits, strings.Fields(sc.Text()))
	}
	f.Close()
	r.open()
	r.harvest()
	r.check(oai.DCPrefix)
	if c := r.committed(); len(c) != 60 {
		t.Errorf("%d paths committed, want 60: the killed page's records never reach the journal", len(c))
	}
}

func killChild() {
	if n, _ := strconv.Atoi(os.Getenv("HARVEST_BATCH_PAGES")); n > 0 {
		batchLimits.pages, batchLimits.records, batchLimits.bytes, batchLimits.age = n, 1<<30, 1<<40, time.Hour
	}
	if n, _ := strconv.Atoi(os.Getenv("HARVEST_KILL_AFTER_RENAMES")); n > 0 {
		pages := 0
		testAfterRenames = func() {
			if pages++; pages == n {
				fmt.Printf("killed after the renames of page %d\n", n)
				os.Exit(137) // no deferred function, no state saved: as kill -9
			}
		}
	}
	if n, _ := strconv.Atoi(os.Getenv("HARVEST_KILL_AFTER_SAVE")); n > 0 {
		batches := 0
		testAfterSave = func() {
			if batches++; batches == n {
				fmt.Printf("killed after the state save of batch %d\n", n)
				os.Exit(137)
			}
		}
	}
	f, err := os.OpenFile(os.Getenv("HARVEST_LOG"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o666)
	if err != nil {
		panic(err)
	}
	h, err := New(Config{
		Endpoint: os.Getenv("HARVEST_ENDPOINT"), Dir: os.Getenv("HARVEST_DIR"), State: os.Getenv("HARVEST_STATE"),
		Committed: func(_ context.Context, paths []string) error {
			_, err := fmt.Fprintln(f, strings.Join(paths, " "))
			return err
		},
	})
	if err != nil {
		panic(err)
	}
	_, err = h.Harvest(context.Background())
	fmt.Println("child harvest ended:", err)
	os.Exit(0)
}

// setBatch makes the harvests of a test commit batches of n pages (and
// no fewer: the other bounds out of reach), as in a long harvest.
func setBatch(t testing.TB, n int) {
	old := batchLimits
	t.Cleanup(func() { batchLimits = old })
	batchLimits.pages, batchLimits.records, batchLimits.bytes, batchLimits.age = n, 1<<30, 1<<40, time.Hour
}

// TestKillBatch: a harvest committing batches of three pages (one syncfs
// pair and one state transaction each), killed (SIGKILL, or an exit
// without any cleanup, which is the same to the disk) at each point of a
// batch, resumes exactly: every record arrives, every path reaches
// Committed, the resumed harvest asks only for the pages of the batches
// not committed and writes nothing twice (a record it finds unchanged
// was renamed into place by a batch whose state did not move past it).
func TestKillBatch(t *testing.T) {
	if os.Getenv("HARVEST_KILL_CHILD") != "" {
		killChild()
		return
	}
	for _, tc := range []struct {
		name string
		env  string // the child's kill point; "" kills it from here while it reads page 5
		// what the resumed harvest asks for and finds
		pages, written, unchanged int
	}{
		// Batch 1 (pages 1-3) committed and reported; batch 2's first
		// page staged, its second being read: both asked for again.
		{"while reading the middle of a batch", "", 3, 30, 0},
		// Batch 1 renamed into place, its state not saved: asked for
		// again, found unchanged; its paths reported from the state.
		{"after a batch's renames", "HARVEST_KILL_AFTER_RENAMES=1", 6, 30, 30},
		// Batch 1's state saved, Committed not called: reported from
		// the state, not asked for again.
		{"after a batch's state save", "HARVEST_KILL_AFTER_SAVE=1", 3, 30, 0},
		// The last batch (pages 4-6, committed while nothing more is
		// read): nothing asked for again, its paths reported.
		{"after the second batch's state save", "HARVEST_KILL_AFTER_SAVE=2", 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, oaitest.Options{PageSize: 10}, nil)
			r.h.Close()
			r.s.Generate(60)
			blocked, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			var mu sync.Mutex
			n := 0
			if tc.env == "" {
				r.s.OnRequest(func(verb string, q url.Values) {
					if verb == oai.ListRecords {
						mu.Lock()
						n++
						k := n
						mu.Unlock()
						if k == 5 {
							once.Do(func() { close(blocked); <-release })
						}
					}
				})
			}
			defer close(release)
			log := filepath.Join(t.TempDir(), "committed")
			cmd := exec.Command(os.Args[0], "-test.run=^TestKillBatch$")
			cmd.Env = append(os.Environ(), "HARVEST_KILL_CHILD=1", "HARVEST_BATCH_PAGES=3", "HARVEST_ENDPOINT="+r.cfg.Endpoint,
				"HARVEST_DIR="+r.cfg.Dir, "HARVEST_STATE="+r.cfg.State, "HARVEST_LOG="+log)
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env)
			}
			out := &syncBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if tc.env == "" {
				<-blocked
				// Batch 1 was committed while page 4 was read; wait
				// for its report (Committed runs last) before the kill.
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
					if b, _ := os.ReadFile(log); strings.Count(string(b), "\n") >= 1 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("batch 1 never reported:\n%s", out)
					}
				}
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
			}
			cmd.Wait()
			if tc.env != "" && !strings.Contains(out.String(), "killed after") {
				t.Fatalf("the child was not stopped in the window:\n%s", out)
			}
			b, _ := os.ReadFile(log)
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if line != "" {
					r.commits = append(r.commits, strings.Fields(line))
				}
			}
			r.open()
			before := r.s.Requests(oai.ListRecords)
			st := r.harvest()
			if got := r.s.Requests(oai.ListRecords) - before; got != tc.pages {
				t.Errorf("the resumed harvest asked for %d pages, want %d", got, tc.pages)
			}
			if st.Written != tc.written || st.Unchanged != tc.unchanged {
				t.Errorf("the resumed harvest wrote %d and found %d unchanged, want %d and %d (%+v)", st.Written, st.Unchanged, tc.written, tc.unchanged, st)
			}
			r.check(oai.DCPrefix)
			if c := r.committed(); len(c) != 60 {
				t.Errorf("%d paths committed, want 60:\n%s", len(c), out)
			}
			filepath.WalkDir(r.cfg.Dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && strings.HasPrefix(d.Name(), tmpPrefix) {
					t.Errorf("staged file left: %s", p)
				}
				return err
			})
		})
	}
}
