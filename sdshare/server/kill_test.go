package server

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestKill9Child is the server process TestKill9 kills; it runs only when
// TestKill9 starts it.
func TestKill9Child(t *testing.T) {
	dir, state := os.Getenv("SDSHARE_KILL9_DATA"), os.Getenv("SDSHARE_KILL9_STATE")
	if dir == "" {
		t.Skip("the child process of TestKill9")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Open(context.Background(), Config{BaseURL: "http://" + ln.Addr().String() + "/", StateDir: state,
		Collections: []CollectionConfig{{Name: "c", Path: dir}}, Rescan: 10 * time.Millisecond, Debounce: 5 * time.Millisecond})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	go http.Serve(ln, srv.Handler())
	fmt.Println("ready", ln.Addr())
	srv.Run(context.Background())
}

// TestKill9: the server is killed with SIGKILL at random moments while
// its files change; every restart finds a consistent state (the journal's
// replay is the inventory, times never go backwards, one baseline) and
// the last start journals exactly the difference to the files.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a server process 8 times; run without -short")
	}
	dir, state := t.TempDir(), t.TempDir()
	write := func(gen int) {
		var b strings.Builder
		for i := range 200 {
			v := i
			if i%3 == gen%3 {
				v += gen * 1000
			}
			if (i+gen)%17 == 0 {
				continue // deleted in this generation
			}
			fmt.Fprintf(&b, "<http://ex/r%d> <http://ex/p> \"%d\" .\n<http://ex/r%d> <http://ex/b> _:b%d .\n_:b%d <http://ex/q> \"%d\" .\n", i, v, i, i, i, v)
		}
		tmp := filepath.Join(dir, ".tmp")
		os.WriteFile(tmp, []byte(b.String()), 0o644)
		os.Rename(tmp, filepath.Join(dir, "data.nt"))
	}
	write(0)
	gen := 0
	for round := range 8 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKill9Child$", "-test.v")
		cmd.Env = append(os.Environ(), "SDSHARE_KILL9_DATA="+dir, "SDSHARE_KILL9_STATE="+state)
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		ready := false
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready") {
				ready = true
				break
			}
			if strings.HasPrefix(sc.Text(), "error") {
				t.Fatalf("round %d: %s", round, sc.Text())
			}
		}
		if !ready {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: the server did not start", round)
		}
		go func() {
			for sc.Scan() {
			}
		}()
		for range 1 + rand.IntN(3) {
			gen++
			write(gen)
			time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
		}
		cmd.Process.Kill() // SIGKILL on Unix
		cmd.Wait()
	}
	// The last start: consistent state, and the files' state journaled.
	e := &env{t: t, dir: dir, state: state, logs: &syncBuf{}}
	e.cfg = Config{StateDir: state, Collections: []CollectionConfig{{Name: "c", Path: dir}}, Rescan: -1}
	e.start()
	defer e.stop()
	c := e.coll()
	replay := map[string][32]byte{}
	var prev time.Time
	var seq uint64
	base, _, _ := storeBaseline(t, c)
	ctx := context.Background()
	for ch, err := range c.st.Journal(ctx, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if ch.Seq != seq+1 || ch.Time.Before(prev) || ch.Time.Before(base) {
			t.Fatalf("journal record %d at %v after %d at %v (baseline %v)", ch.Seq, ch.Time, seq, prev, base)
		}
		seq, prev = ch.Seq, ch.Time
		if ch.Kind == "deleted" {
			delete(replay, ch.Path())
		} else {
			replay[ch.Path()] = ch.Resource.SHA256
		}
	}
	inv := map[string][32]byte{}
	for r, err := range c.st.Resources(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		inv[r.Path] = r.SHA256
	}
	// Resources never journaled are the baseline's, unchanged since.
	for p, h := range inv {
		if _, ok := replay[p]; !ok {
			replay[p] = h
		}
	}
	v := c.version()
	res := resourcesOf(t, v)
	if len(inv) != len(res) {
		t.Errorf("inventory has %d resources, the files %d", len(inv), len(res))
	}
	for _, r := range res {
		if inv[r.Value] != hashTriples(fragmentOf(t, v, r)) {
			t.Errorf("inventory of %s does not match the files", r.Value)
		}
		if replay[r.Value] != inv[r.Value] {
			t.Errorf("journal replay of %s does not match the inventory", r.Value)
		}
	}
	t.Logf("%d journal records over %d kills", seq, 8)
}
