package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// randomSmallFile is a small collection file of statements about some
// of the resources of genData(400) and new ones, with blank node
// structures, statements another file has too, and now and then nothing.
func randomSmallFile(rng *rand.Rand, big []string) string {
	if rng.IntN(8) == 0 {
		return ""
	}
	var b strings.Builder
	for range 1 + rng.IntN(6) {
		r := rng.IntN(450)
		switch rng.IntN(5) {
		case 0:
			fmt.Fprintf(&b, "<http://ex/r%d> <http://www.w3.org/2000/01/rdf-schema#label> \"Small %d\" .\n", r, rng.IntN(3))
		case 1:
			fmt.Fprintf(&b, "<http://ex/r%d> <http://ex/p> <http://ex/r%d> .\n", r, rng.IntN(450))
		case 2:
			k := rng.IntN(4)
			fmt.Fprintf(&b, "<http://ex/r%d> <http://ex/s> _:x%d .\n_:x%d <http://ex/q> \"%d\" .\n_:x%d <http://ex/next> _:y%d .\n_:y%d <http://ex/q> \"y\" .\n", r, k, k, rng.IntN(3), k, k, k)
		case 3:
			b.WriteString(big[rng.IntN(len(big))]) // also in a.nt
		default:
			fmt.Fprintf(&b, "_:free%d <http://ex/q> \"unreached %d\" .\n", rng.IntN(3), rng.IntN(3))
		}
	}
	return b.String()
}

// layerState is what a version serves: its groups (what snapshots and
// chunks are written from), every resource's fragment in N-Triples and
// Turtle, and the inventory's hash and size of each.
func layerState(t *testing.T, c *Collection) string {
	t.Helper()
	v := c.acquire()
	defer c.release(v)
	var b strings.Builder
	fmt.Fprintf(&b, "triples %d subjects %d resources %d\n", v.gf.triples, v.gf.subjects, v.gf.resources)
	var iris []string
	if err := v.gf.groups(false, func(g group) error {
		fmt.Fprintf(&b, "%q %q\n", g.key, g.lines)
		if g.key[0] == kindIRI {
			iris = append(iris, g.key[1:])
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b.WriteString("blank from here\n")
	if err := v.gf.groups(true, func(g group) error {
		fmt.Fprintf(&b, "%q %q\n", g.key, g.lines)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, iri := range iris {
		for _, f := range []rdf.Format{rdf.NTriples, rdf.Turtle} {
			frag, err := c.fragment(iri, f)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %v\n%s", iri, f, frag)
		}
	}
	for r, err := range c.st.Resources(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "inventory %s %x %d\n", r.Path, r.SHA256, r.Size)
	}
	return b.String()
}

// TestOverlayEqualsFullMerge changes the small files of a directory
// collection at random, reloading after each change: the reloads write
// overlays (layer.go), and after every change the graph, the fragments
// and the inventory equal those of a fresh server opened on the same
// files; the changes journalled equal those of a server that merges
// every run at every load.
func TestOverlayEqualsFullMerge(t *testing.T) {
	seeds := uint64(2)
	if testing.Short() {
		seeds = 1
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 33))
			ctx := context.Background()
			dir := t.TempDir()
			big := genData(400)
			bigLines := strings.SplitAfter(strings.TrimSuffix(big, "\n"), "\n")
			os.WriteFile(filepath.Join(dir, "a.nt"), []byte(big), 0o644)
			small := []string{"b.nt", "c.nt", "d.nt"}
			for _, n := range small {
				os.WriteFile(filepath.Join(dir, n), []byte(randomSmallFile(rng, bigLines)), 0o644)
			}
			open := func(merge bool) *Collection {
				s, err := Open(ctx, Config{BaseURL: "http://127.0.0.1/", StateDir: t.TempDir(), NoSync: true, Rescan: -1,
					Collections: []CollectionConfig{{Name: "c", Path: dir}}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				c := s.Collection("c")
				c.noLayer = merge
				return c
			}
			layered, merged := open(false), open(true)
			overlays := 0
			for step := range 12 {
				name := small[rng.IntN(len(small))]
				if step%5 == 4 {
					name = "a.nt" // the big file changes too (layered while small enough)
					big = strings.Replace(big, fmt.Sprintf("\"Resource %d\"", rng.IntN(400)), "\"changed\"", 1)
					os.WriteFile(filepath.Join(dir, name), []byte(big), 0o644)
				} else {
					os.WriteFile(filepath.Join(dir, name), []byte(randomSmallFile(rng, bigLines)), 0o644)
				}
				lr, err := layered.Load(ctx, true)
				if err != nil {
					t.Fatal(err)
				}
				mr, err := merged.Load(ctx, true)
				if err != nil {
					t.Fatal(err)
				}
				if layered.version().gf.over != nil {
					overlays++
				}
				if merged.version().gf.over != nil {
					t.Fatal("noLayer wrote an overlay")
				}
				// What a load read and compared depends on timing (racy runs).
				lr.FilesRead, mr.FilesRead, lr.Compared, mr.Compared = 0, 0, 0, 0
				if lr != mr {
					t.Fatalf("step %d (%s): layered load %+v, merged %+v", step, name, lr, mr)
				}
				if step%3 != 2 {
					continue // a fresh server every third change: the layers chain in between
				}
				fresh := open(true)
				want := layerState(t, fresh)
				if got := layerState(t, layered); got != want {
					t.Fatalf("step %d (%s): the layered graph serves\n%s\nwant (a fresh server)\n%s", step, name, diffLines(got, want), "")
				}
				if got := layerState(t, merged); got != want {
					t.Fatalf("step %d (%s): the merged graph differs from a fresh server's:\n%s", step, name, diffLines(got, want))
				}
			}
			if overlays < 8 {
				t.Fatalf("%d of 12 reloads wrote an overlay", overlays)
			}
		})
	}
}

// diffLines shows the first lines where got and want differ.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		gl, wl := "", ""
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i, gl, wl)
		}
	}
	return "(equal)"
}

// TestSmallChangeKeepsTheGraphFile: a one-resource change of a
// directory collection writes a graph file the size of the change, and
// the large one stays (before overlays, every reload wrote all of it).
func TestSmallChangeKeepsTheGraphFile(t *testing.T) {
	defer func(w time.Duration) { racyWindow = w }(racyWindow)
	racyWindow = 0
	ctx := context.Background()
	dir, state := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.nt"), []byte(genData(2000)), 0o644)
	os.WriteFile(filepath.Join(dir, "b.nt"), []byte("<http://ex/one> <http://ex/v> \"1\" .\n"), 0o644)
	s, err := Open(ctx, Config{BaseURL: "http://127.0.0.1/", StateDir: state, NoSync: true, Rescan: -1,
		Collections: []CollectionConfig{{Name: "c", Path: dir}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	graphFiles := func() map[string]int64 {
		out := map[string]int64{}
		es, _ := os.ReadDir(indexDir(state, "c"))
		for _, e := range es {
			if fi, err := e.Info(); err == nil && strings.HasPrefix(e.Name(), "g-") {
				out[e.Name()] = fi.Size()
			}
		}
		return out
	}
	before := graphFiles()
	if len(before) != 1 {
		t.Fatalf("graph files %v", before)
	}
	var total int64
	for _, n := range before {
		total = n
	}
	for i := range 3 {
		os.WriteFile(filepath.Join(dir, "b.nt"), []byte(fmt.Sprintf("<http://ex/one> <http://ex/v> \"%d\" .\n", i+2)), 0o644)
		rep, err := s.Collection("c").Load(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Updated != 1 || rep.Created+rep.Deleted != 0 {
			t.Fatalf("reload %d: %+v", i, rep)
		}
		after := graphFiles()
		var written int64
		for n, size := range after {
			if _, ok := before[n]; !ok {
				written += size
			}
		}
		for n, size := range before {
			if after[n] != size {
				t.Errorf("reload %d: graph file %s gone or changed (%d bytes, now %d)", i, n, size, after[n])
			}
		}
		if written*100 > total {
			t.Errorf("reload %d: %d bytes of graph files written for a one-resource change of a %d-byte graph", i, written, total)
		}
	}
	frag, err := s.Collection("c").Fragment(ctx, "http://ex/one", rdf.NTriples)
	if err != nil || string(frag) != "<http://ex/one> <http://ex/v> \"4\" .\n" {
		t.Fatalf("fragment %q, %v", frag, err)
	}
}
