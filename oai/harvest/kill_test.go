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
	cmd.Env = append(os.Environ(), "HARVEST_KILL_CHILD=1", "HARVEST_ENDPOINT="+r.cfg.Endpoint,
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
	cmd.Env = append(os.Environ(), "HARVEST_KILL_CHILD=1", "HARVEST_KILL_AFTER_RENAMES=3", "HARVEST_ENDPOINT="+r.cfg.Endpoint,
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
	if n, _ := strconv.Atoi(os.Getenv("HARVEST_KILL_AFTER_RENAMES")); n > 0 {
		pages := 0
		testAfterRenames = func() {
			if pages++; pages == n {
				fmt.Printf("killed after the renames of page %d\n", n)
				os.Exit(137) // no deferred function, no state saved: as kill -9
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
