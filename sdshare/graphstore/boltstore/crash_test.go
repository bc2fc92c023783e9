package boltstore_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/graphstoretest"
)

const (
	crashPathEnv       = "GRAPHSTORE_CRASH_PATH"
	crashSeedEnv       = "GRAPHSTORE_CRASH_SEED"
	crashModeEnv       = "GRAPHSTORE_CRASH_MODE"           // "fragments": no ReplaceGraph; "batches": ApplyFragments only
	crashNoFreelistEnv = "GRAPHSTORE_CRASH_NOFREELISTSYNC" // Options.NoFreelistSync when set
	crashFrags         = 8
	crashRounds        = 10
)

// crashFragment is resource k's fragment at version v: nested blank nodes,
// so that a torn write would show as a partial closure.
func crashFragment(k, v int) []rdf.Triple {
	r := rdf.IRI(fmt.Sprint("http://e/r", k))
	p := rdf.IRI("http://e/p")
	var ts []rdf.Triple
	for i := range 1 + v%4 {
		b := rdf.Blank(fmt.Sprint("b", i))
		c := rdf.Blank(fmt.Sprint("c", i))
		ts = append(ts, rdf.Triple{S: r, P: p, O: b},
			rdf.Triple{S: b, P: p, O: rdf.Literal(fmt.Sprint(v, "-", i))},
			rdf.Triple{S: b, P: p, O: c},
			rdf.Triple{S: c, P: p, O: rdf.Literal(fmt.Sprint("deep ", v))})
	}
	return ts
}

// crashSnapshot is graph G2's snapshot at version v: several batches of
// the child's batch size, some blank nodes.
func crashSnapshot(v int) []rdf.Triple {
	n := 3000 + 500*(v%5)
	ts := make([]rdf.Triple, 0, n+n/50)
	for i := range n {
		s := rdf.IRI(fmt.Sprint("http://e/s", i))
		ts = append(ts, rdf.Triple{S: s, P: rdf.IRI("http://e/p"), O: rdf.Literal(fmt.Sprint(v, "/", i))})
		if i%100 == 0 {
			b := rdf.Blank(fmt.Sprint("x", i))
			ts = append(ts, rdf.Triple{S: s, P: rdf.IRI("http://e/q"), O: b}, rdf.Triple{S: b, P: rdf.IRI("http://e/p"), O: rdf.Literal(fmt.Sprint(v))})
		}
	}
	return ts
}

// TestCrashChild is the helper process of TestCrash: it applies fragments
// to G1 and replaces G2 at random until it is killed, printing "begin"
// before and "end" after each write.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashPathEnv)
	if path == "" {
		t.Skip("helper process for TestCrash")
	}
	seed, _ := strconv.ParseUint(os.Getenv(crashSeedEnv), 10, 64)
	s, err := boltstore.Open(path, &boltstore.Options{LockTimeout: 10 * time.Second, BatchSize: 1000, NoFreelistSync: os.Getenv(crashNoFreelistEnv) != ""})
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 1))
	fmt.Println("ready")
	for {
		v := rng.IntN(1000000)
		if os.Getenv(crashModeEnv) == "mixed" && rng.IntN(5) == 0 {
			fmt.Println("begin snap", v)
			if err := s.ReplaceGraph(ctx, graphstoretest.G2, graphstoretest.Seq(crashSnapshot(v))); err != nil {
				fmt.Println("error:", err)
				os.Exit(3)
			}
			fmt.Println("end snap", v)
			continue
		}
		if os.Getenv(crashModeEnv) == "batches" {
			// A batch of 1 to 40 fragments, the same resource possibly
			// more than once, now and then an invalid one (skipped).
			var fs []graphstore.Fragment
			line := "begin batch"
			for range 1 + rng.IntN(40) {
				k, v := rng.IntN(crashFrags), rng.IntN(1000000)
				var ts []rdf.Triple
				if v%7 != 0 {
					ts = crashFragment(k, v)
				}
				fs = append(fs, graphstore.Fragment{Resource: rdf.IRI(fmt.Sprint("http://e/r", k)), Triples: ts})
				line += fmt.Sprint(" ", k, " ", v)
				if rng.IntN(10) == 0 {
					fs = append(fs, graphstore.Fragment{Resource: rdf.Blank("invalid"), Triples: ts})
				}
			}
			fmt.Println(line)
			errs, err := s.ApplyFragments(ctx, graphstoretest.G1, fs)
			if err != nil {
				fmt.Println("error:", err)
				os.Exit(3)
			}
			for i, e := range errs {
				if e != nil != fs[i].Resource.IsBlank() {
					fmt.Println("error: fragment", i, e)
					os.Exit(3)
				}
			}
			fmt.Println("end batch")
			continue
		}
		k := rng.IntN(crashFrags)
		var ts []rdf.Triple
		if v%7 != 0 { // else delete the resource
			ts = crashFragment(k, v)
		}
		fmt.Println("begin frag", k, v)
		if err := s.ApplyFragment(ctx, graphstoretest.G1, rdf.IRI(fmt.Sprint("http://e/r", k)), ts); err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		fmt.Println("end frag", k, v)
	}
}

// TestCrash kills a process that writes to the store with SIGKILL at
// random moments. After each kill the store opens, passes Check, and
// every resource of G1 and the graph G2 is as the last completed write
// left it or as the interrupted one would have.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a child process; run without -short (CI does)")
	}
	path := filepath.Join(t.TempDir(), "graph.db")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	const none = -1
	// The model: each resource's and G2's version; none means absent.
	frag := make([]int, crashFrags)
	for k := range frag {
		frag[k] = none
	}
	snap := none
	ops, midSnap, midFrag, midBatch, batches := 0, 0, 0, 0, 0
	for round := range crashRounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashPathEnv+"="+path, crashSeedEnv+"="+strconv.FormatUint(rng.Uint64(), 10),
			crashModeEnv+"="+[]string{"mixed", "fragments", "batches"}[round%3],
			crashNoFreelistEnv+"="+[]string{"", "1"}[round%2])
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		if l := <-lines; l != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("round %d: child says %q", round, l)
		}
		killer := time.AfterFunc(time.Duration(50+rng.IntN(700))*time.Millisecond, func() { cmd.Process.Signal(syscall.SIGKILL) })
		var pendFrag [2]int = [2]int{none, none} // resource, version
		pendSnap := none
		var pendBatch []int // resource, version, resource, version, ...
		for l := range lines {
			f := strings.Fields(l)
			switch {
			case len(f) == 4 && f[0] == "begin" && f[1] == "frag":
				k, _ := strconv.Atoi(f[2])
				v, _ := strconv.Atoi(f[3])
				pendFrag = [2]int{k, v}
			case len(f) == 4 && f[0] == "end" && f[1] == "frag":
				frag[pendFrag[0]] = fragVersion(pendFrag[1])
				pendFrag = [2]int{none, none}
				ops++
			case len(f) >= 4 && f[0] == "begin" && f[1] == "batch":
				pendBatch = pendBatch[:0]
				for _, x := range f[2:] {
					n, _ := strconv.Atoi(x)
					pendBatch = append(pendBatch, n)
				}
			case len(f) == 2 && f[0] == "end" && f[1] == "batch":
				for i := 0; i+1 < len(pendBatch); i += 2 {
					frag[pendBatch[i]] = fragVersion(pendBatch[i+1])
				}
				pendBatch = nil
				ops++
				batches++
			case len(f) == 3 && f[0] == "begin" && f[1] == "snap":
				pendSnap, _ = strconv.Atoi(f[2])
			case len(f) == 3 && f[0] == "end" && f[1] == "snap":
				snap, pendSnap = pendSnap, none
				ops++
			default:
				killer.Stop()
				cmd.Process.Kill()
				t.Fatalf("round %d: child says %q", round, l)
			}
		}
		cmd.Wait()
		if pendSnap != none {
			midSnap++
		}
		if pendFrag[0] != none {
			midFrag++
		}
		// A batch is all or nothing: G1 is the model before it or the
		// model after it, never some of its fragments.
		var after []int
		if pendBatch != nil {
			midBatch++
			after = slices.Clone(frag)
			for i := 0; i+1 < len(pendBatch); i += 2 {
				after[pendBatch[i]] = fragVersion(pendBatch[i+1])
			}
		}
		// Verify, and resolve the interrupted write from what is stored.
		s, err := boltstore.Open(path, &boltstore.Options{LockTimeout: 10 * time.Second})
		if err != nil {
			t.Fatalf("round %d: Open after kill: %v", round, err)
		}
		ctx := context.Background()
		if err := s.Check(ctx); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if after != nil {
			model := resolveBatch(t, s, frag, after)
			if model == nil {
				t.Fatalf("round %d: killed in a batch of %v, G1 is neither the state before it nor after it", round, pendBatch)
			}
			copy(frag, model)
		}
		for k := range crashFrags {
			got, err := s.Fragment(ctx, graphstoretest.G1, rdf.IRI(fmt.Sprint("http://e/r", k)))
			if err != nil {
				t.Fatal(err)
			}
			cands := []int{frag[k]}
			if pendFrag[0] == k {
				cands = append(cands, fragVersion(pendFrag[1]))
			}
			v, ok := match(got, cands, func(v int) []rdf.Triple {
				if v == none {
					return nil
				}
				return crashFragment(k, v)
			})
			if !ok {
				t.Fatalf("round %d: resource %d is none of versions %v:\n%v", round, k, cands, got)
			}
			frag[k] = v
		}
		got := graphstoretest.All(t, s, graphstoretest.G2)
		v, ok := match(got, []int{snap, pendSnap}, func(v int) []rdf.Triple {
			if v == none {
				return nil
			}
			return crashSnapshot(v)
		})
		if !ok {
			t.Fatalf("round %d: G2 (%d triples) is neither snapshot %d nor %d", round, len(got), snap, pendSnap)
		}
		snap = v
		s.Close()
	}
	t.Logf("%d kills after %d completed writes (%d batches); %d interrupted a ReplaceGraph, %d an ApplyFragment, %d an ApplyFragments", crashRounds, ops, batches, midSnap, midFrag, midBatch)
	if batches == 0 {
		t.Error("no batch completed; the test proves little about ApplyFragments")
	}
	if ops < crashRounds {
		t.Errorf("only %d writes completed in %d rounds; the test proves little", ops, crashRounds)
	}
}

// fragVersion is the model's version after fragment version v: a version
// divisible by 7 deletes the resource.
func fragVersion(v int) int {
	if v%7 == 0 {
		return -1
	}
	return v
}

func match(got []rdf.Triple, cands []int, content func(int) []rdf.Triple) (int, bool) {
	for _, v := range cands {
		if want := content(v); len(want) == len(got) && graphstoretest.Isomorphic(got, want) {
			return v, true
		}
	}
	return 0, false
}

// resolveBatch returns the model of G1 (each resource's version) the
// store holds, before or after the interrupted batch, or nil when it is
// neither.
func resolveBatch(t *testing.T, s *boltstore.Store, before, after []int) []int {
	t.Helper()
	for _, model := range [][]int{before, after} {
		ok := true
		for k := range crashFrags {
			got, err := s.Fragment(context.Background(), graphstoretest.G1, rdf.IRI(fmt.Sprint("http://e/r", k)))
			if err != nil {
				t.Fatal(err)
			}
			var want []rdf.Triple
			if model[k] != -1 {
				want = crashFragment(k, model[k])
			}
			if len(got) != len(want) || !graphstoretest.Isomorphic(got, want) {
				ok = false
				break
			}
		}
		if ok {
			return model
		}
	}
	return nil
}
