package source

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/memstore"
	"github.com/resourcesync-go/resourcesync/source/store/pgstore"
	"github.com/resourcesync-go/resourcesync/source/store/storetest"
)

// TestReplicasModel drives seeded random histories through Source replicas
// on one shared store and one directory: files created, updated and
// deleted, the leader losing its role (memstore.Lose) or restarting, a
// replica restarting, a follower down for a few steps (lagging) and coming
// back. After each step, once exactly one running replica leads and the
// store has caught up with the directory, every running replica serves the
// same bytes, the Resource List describes the directory exactly, the
// journal is contiguous and its replay is the inventory, and the Change
// Lists list every journal record once, in order. REPLICAMODEL_SEED=N
// replays one history.
func TestReplicasModel(t *testing.T) {
	steps := 40
	if testing.Short() {
		steps = 10
	}
	t.Run("memstore", func(t *testing.T) {
		db := memstore.New()
		replicaModel(t, memOpener(db), steps, func(l *replica) error {
			l.src.Store("default").(*memstore.Store).Lose()
			return nil
		})
	})
	t.Run("pgstore", func(t *testing.T) {
		pgtest.Skip(t)
		u := pgtest.Database(t)
		// The leader's connection breaks: the server ends the backend
		// that holds the scanner role's advisory lock.
		lose := func(*replica) error {
			ctx := context.Background()
			conn, err := pgx.Connect(ctx, u)
			if err != nil {
				return err
			}
			defer conn.Close(ctx)
			epoch := func() (e int64, err error) {
				err = conn.QueryRow(ctx, `SELECT lead_epoch FROM rs_sets WHERE name = 'default'`).Scan(&e)
				return e, err
			}
			before, err := epoch()
			if err != nil {
				return err
			}
			var n int
			if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_locks
				WHERE locktype = 'advisory' AND granted AND objsubid = 2
				AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n); err != nil {
				return err
			}
			if n != 1 {
				return fmt.Errorf("%d backends hold the scanner role", n)
			}
			// Some replica (the same one or another) takes the role again:
			// a new epoch.
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if e, err := epoch(); err != nil || e > before {
					return err
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("no replica took the role within 10s (epoch %d)", before)
				}
			}
		}
		replicaModel(t, func(ctx context.Context, set string) (store.Store, error) { return pgstore.Open(ctx, u, set, nil) },
			max(steps/2, 5), lose)
	})
}

// modelFiles are the files a history writes: nested, with a space, a
// percent sign and non-ASCII (escaped in the documents' URLs).
var modelFiles = []string{"a", "x y", "p%20q", "d/a", "d/b", "d/ü", "d/e/f", "d/e/g"}

const modelBase = "http://127.0.0.1:1/"

type modelReplica struct {
	name  string
	state string
	r     *replica // nil while down
	down  int      // steps left down (a lagging follower)
}

// lose makes the leader lose its role without stopping it (its
// connection to the shared state broke).
func replicaModel(t *testing.T, open opener, steps int, lose func(leader *replica) error) {
	seed := uint64(0)
	if v := os.Getenv("REPLICAMODEL_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("REPLICAMODEL_SEED=%q: %v", v, err)
		}
		seed = n
	} else {
		seed = rand.Uint64()>>1 + 1
	}
	t.Logf("seed %d (replay with REPLICAMODEL_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x2e9))
	ctx := context.Background()
	dir := t.TempDir()
	files := map[string]string{} // the truth: path -> content
	writeFile := func(p string) {
		c := fmt.Sprintf("content %d\n", rng.IntN(20)) // often the same size: the scanner must not trust a racy mtime
		write(t, dir, p, c)
		files[p] = c
	}
	for _, p := range modelFiles {
		if rng.IntN(2) == 0 {
			writeFile(p)
		}
	}
	obs, err := open(ctx, "default") // an observer's handle on the shared state
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()

	n := 2 + rng.IntN(2)
	reps := make([]*modelReplica, n)
	for i := range reps {
		reps[i] = &modelReplica{name: string(rune('A' + i)), state: t.TempDir()}
		reps[i].r = startReplica(t, open, dir, reps[i].state)
	}
	running := func() []*modelReplica {
		var out []*modelReplica
		for _, m := range reps {
			if m.r != nil {
				out = append(out, m)
			}
		}
		return out
	}
	leaderOf := func() *modelReplica {
		for _, m := range running() {
			if m.r.leads() {
				return m
			}
		}
		return nil
	}
	restart := func(m *modelReplica) {
		m.r.stop()
		m.r = startReplica(t, open, dir, m.state)
	}

	start := time.Now()
	settle(t, ctx, -1, "start", obs, running(), files)
	for step := range steps {
		var desc string
		// A lagging follower comes back.
		for _, m := range reps {
			if m.r == nil {
				if m.down--; m.down <= 0 {
					m.r = startReplica(t, open, dir, m.state)
				}
			}
		}
		switch r := rng.IntN(100); {
		case r < 45:
			var ops []string
			for range 1 + rng.IntN(3) {
				p := modelFiles[rng.IntN(len(modelFiles))]
				if _, ok := files[p]; ok && rng.IntN(3) == 0 {
					if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
						t.Fatal(err)
					}
					delete(files, p)
					ops = append(ops, "delete "+p)
				} else {
					writeFile(p)
					ops = append(ops, "write "+p)
				}
			}
			desc = strings.Join(ops, ", ")
		case r < 60:
			l := leaderOf()
			if l == nil {
				desc = "no leader"
			} else if rng.IntN(2) == 0 {
				desc = "leader " + l.name + " loses its role"
				if err := lose(l.r); err != nil {
					t.Fatalf("step %d: %s: %v", step, desc, err)
				}
				if rng.IntN(2) == 0 { // changes during the takeover
					p := modelFiles[rng.IntN(len(modelFiles))]
					writeFile(p)
					desc += ", write " + p
				}
			} else {
				desc = "leader " + l.name + " restarts"
				restart(l)
			}
		case r < 75:
			m := reps[rng.IntN(len(reps))]
			if m.r == nil {
				desc = "replica " + m.name + " is down: nothing"
				break
			}
			desc = "replica " + m.name + " restarts"
			restart(m)
		case r < 85:
			var fs []*modelReplica
			for _, m := range running() {
				if !m.r.leads() {
					fs = append(fs, m)
				}
			}
			if len(fs) == 0 {
				desc = "no follower to lag"
				break
			}
			m := fs[rng.IntN(len(fs))]
			m.down = 1 + rng.IntN(3)
			desc = fmt.Sprintf("follower %s down for %d steps", m.name, m.down)
			m.r.stop()
			m.r = nil
		default:
			desc = "changes while the leader restarts"
			l := leaderOf()
			if l == nil {
				desc = "no leader"
				break
			}
			l.r.stop()
			for range 1 + rng.IntN(2) {
				writeFile(modelFiles[rng.IntN(len(modelFiles))])
			}
			l.r = startReplica(t, open, dir, l.state)
		}
		settle(t, ctx, step, desc, obs, running(), files)
	}
	st, _ := obs.Stats(ctx)
	t.Logf("%d replicas, %d steps in %v: %d files, %d journal records", n, steps, time.Since(start).Round(time.Millisecond), len(files), st.LastSeq)
}

// settle waits until exactly one running replica leads, the store's
// inventory equals the directory and every running replica renders the
// same documents, then checks the documents and the journal.
func settle(t *testing.T, ctx context.Context, step int, desc string, obs store.Store, running []*modelReplica, files map[string]string) {
	t.Helper()
	t.Logf("step %d: %s", step, desc)
	// The documents are checked once settled, and again until they pass:
	// the leader commits the journal before the Change List boundaries
	// (meta), so that the Change Lists may lag the journal for a moment.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		why, tree := settled(ctx, obs, running, files)
		if why == "" {
			err := checkTree(ctx, obs, tree, files)
			if err == nil {
				return
			}
			why = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("step %d (%s): not settled after 30s: %s", step, desc, why)
		}
	}
}

func settled(ctx context.Context, obs store.Store, running []*modelReplica, files map[string]string) (string, map[string][]byte) {
	var leaders []string
	for _, m := range running {
		if m.r.leads() {
			leaders = append(leaders, m.name)
		}
	}
	if len(leaders) != 1 {
		return fmt.Sprintf("leaders %q", leaders), nil
	}
	inv := map[string]store.Resource{}
	for r, err := range obs.Resources(ctx) {
		if err != nil {
			return err.Error(), nil
		}
		inv[r.Path] = r
	}
	if err := sameAsFiles(inv, files); err != nil {
		return "inventory: " + err.Error(), nil
	}
	var first map[string][]byte
	for _, m := range running {
		d := modelDocs(m.r.src.Out())
		if first == nil {
			first = d
			if err := resourceListIs(d, files); err != nil {
				return m.name + ": " + err.Error(), nil
			}
		} else if !maps.EqualFunc(first, d, bytes.Equal) {
			return fmt.Sprintf("%s and %s differ: %s", running[0].name, m.name, docsDiff(first, d)), nil
		}
	}
	return "", first
}

// modelDocs is docs without the temporary files of a write in progress.
func modelDocs(dir string) map[string][]byte {
	out := map[string][]byte{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".tmp-") {
			return nil
		}
		if rel, b, err := readDoc(dir, p); err == nil {
			out[rel] = b
		}
		return nil
	})
	return out
}

func docsDiff(a, b map[string][]byte) string {
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if w, ok := b[k]; !ok {
			return k + " only in the first"
		} else if !bytes.Equal(a[k], w) {
			return fmt.Sprintf("%s differs:\n--- first:\n%s\n--- second:\n%s", k, a[k], w)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			return k + " only in the second"
		}
	}
	return "equal"
}

func sameAsFiles(inv map[string]store.Resource, files map[string]string) error {
	for p, c := range files {
		r, ok := inv[p]
		if !ok {
			return fmt.Errorf("%q missing", p)
		}
		if r.Size != int64(len(c)) || r.MD5 != md5.Sum([]byte(c)) {
			return fmt.Errorf("%q: size %d md5 %x; file %d bytes, md5 %x", p, r.Size, r.MD5, len(c), md5.Sum([]byte(c)))
		}
	}
	for p := range inv {
		if _, ok := files[p]; !ok {
			return fmt.Errorf("%q is not in the directory", p)
		}
	}
	return nil
}

// parseDoc decodes one document of the tree.
func parseDoc(tree map[string][]byte, name string) (*rs.Head, []*rs.Entry, error) {
	b, ok := tree[name]
	if !ok {
		return nil, nil, fmt.Errorf("%s missing", name)
	}
	d := rs.NewDecoder(bytes.NewReader(b))
	h, err := d.Head()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	var es []*rs.Entry
	for {
		e, err := d.Next()
		if errors.Is(err, io.EOF) {
			return h, es, nil
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		es = append(es, e)
	}
}

// locPath maps a URL of the tree to its path relative to the base.
func locPath(loc string) (string, error) {
	rest, ok := strings.CutPrefix(loc, modelBase)
	if !ok {
		return "", fmt.Errorf("URL %q outside the base", loc)
	}
	return url.PathUnescape(rest)
}

// entries reads a document that may be an index of parts: the entries
// of every part, in the index's order.
func entries(tree map[string][]byte, name string) ([]*rs.Entry, error) {
	h, es, err := parseDoc(tree, name)
	if err != nil || !h.IsIndex() {
		return es, err
	}
	var out []*rs.Entry
	for _, e := range es {
		p, err := locPath(e.Loc)
		if err != nil {
			return nil, err
		}
		_, part, err := parseDoc(tree, p)
		if err != nil {
			return nil, err
		}
		out = append(out, part...)
	}
	return out, nil
}

// resourceListIs checks that the Resource List describes files exactly.
func resourceListIs(tree map[string][]byte, files map[string]string) error {
	es, err := entries(tree, ".resourcesync/default/resourcelist.xml")
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, e := range es {
		p, err := locPath(e.Loc)
		if err != nil {
			return err
		}
		c, ok := files[p]
		switch {
		case seen[p]:
			return fmt.Errorf("resource list: %q twice", p)
		case !ok:
			return fmt.Errorf("resource list: %q is not in the directory", p)
		case !e.MD.HasLength || e.MD.Length != int64(len(c)):
			return fmt.Errorf("resource list: %q length %d, file %d bytes", p, e.MD.Length, len(c))
		}
		sum := md5.Sum([]byte(c))
		if got := e.MD.Hashes.Get("md5"); got != hex.EncodeToString(sum[:]) {
			return fmt.Errorf("resource list: %q md5 %s, file %x", p, got, sum)
		}
		seen[p] = true
	}
	if len(seen) != len(files) {
		return fmt.Errorf("resource list: %d resources, directory %d files", len(seen), len(files))
	}
	return nil
}

// checkTree checks a settled tree against the journal: contiguous, its
// replay equal to the inventory, and every record in the Change Lists once,
// in order.
func checkTree(ctx context.Context, obs store.Store, tree map[string][]byte, files map[string]string) error {
	if err := resourceListIs(tree, files); err != nil {
		return err
	}
	var jnl []store.Change
	for c, err := range obs.Journal(ctx, 0) {
		if err != nil {
			return err
		}
		if c.Seq != uint64(len(jnl)+1) {
			return fmt.Errorf("journal: seq %d at position %d", c.Seq, len(jnl)+1)
		}
		jnl = append(jnl, c)
	}
	if err := storetest.CheckReplay(ctx, obs); err != nil {
		return err
	}
	es, err := entries(tree, ".resourcesync/default/changelist.xml")
	if err != nil {
		return err
	}
	if len(es) != len(jnl) {
		return fmt.Errorf("change lists: %d entries, journal %d records", len(es), len(jnl))
	}
	for i, e := range es {
		p, err := locPath(e.Loc)
		if err != nil {
			return err
		}
		c := jnl[i]
		if p != c.Path() || e.MD.Change != c.Kind || !e.MD.DateTime.Time().Equal(c.Time) {
			return fmt.Errorf("change lists entry %d: %q %s %v; journal seq %d: %q %s %v", i, p, e.MD.Change, e.MD.DateTime, c.Seq, c.Path(), c.Kind, c.Time)
		}
	}
	return nil
}
