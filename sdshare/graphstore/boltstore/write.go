package boltstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"iter"
	"slices"

	"go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// closure returns the subject ids of r's fragment (SD-SRV-26): r and the
// blank nodes reachable from it through blank nodes, each once.
func closure(gb *bbolt.Bucket, r uint64) []uint64 {
	seen := map[uint64]bool{r: true}
	todo := []uint64{r}
	c := gb.Cursor()
	for i := 0; i < len(todo); i++ {
		prefix := u64(todo[i])
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if _, _, o, ok := splitKey(k); ok && isBlank(o) && !seen[o] {
				seen[o] = true
				todo = append(todo, o)
			}
		}
	}
	return todo
}

// ApplyFragment implements graphstore.Store in one transaction.
func (s *Store) ApplyFragment(ctx context.Context, g string, r rdf.Term, ts []rdf.Triple) error {
	if err := graphstore.CheckFragment(g, graphstore.Fragment{Resource: r, Triples: ts}); err != nil {
		return err
	}
	if err := s.usable(ctx); err != nil {
		return err
	}
	return s.update(func(tx *bbolt.Tx) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		w := newWtx(tx)
		if err := w.applyFragment(g, r, ts); err != nil {
			return err
		}
		return w.finish()
	})
}

// ApplyFragments implements graphstore.BatchApplier: the fragments that
// pass graphstore.CheckFragment in one transaction, so one commit (one
// fsync) for all of them. The reference counts of the whole batch are
// summed and written once, by finish.
func (s *Store) ApplyFragments(ctx context.Context, g string, fs []graphstore.Fragment) ([]error, error) {
	var errs []error
	ok := make([]bool, len(fs))
	any := false
	for i, f := range fs {
		if err := graphstore.CheckFragment(g, f); err != nil {
			if errs == nil {
				errs = make([]error, len(fs))
			}
			errs[i] = err
			continue
		}
		ok[i], any = true, true
	}
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	if !any {
		return errs, nil
	}
	err := s.update(func(tx *bbolt.Tx) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		w := newWtx(tx)
		for i, f := range fs {
			if !ok[i] {
				continue
			}
			if err := w.applyFragment(g, f.Resource, f.Triples); err != nil {
				return err
			}
		}
		return w.finish()
	})
	if err != nil {
		return nil, err
	}
	return errs, nil
}

// applyFragment replaces r's fragment in g with ts within w's
// transaction; the caller has checked its arguments and calls finish.
func (w *wtx) applyFragment(g string, r rdf.Term, ts []rdf.Triple) error {
	gk := w.graphs.Get([]byte(g))
	var gb *bbolt.Bucket
	if gk == nil {
		if len(ts) == 0 {
			return nil // deleting from a graph that does not exist
		}
		gid, err := newGraphID(w.tx)
		if err != nil {
			return err
		}
		gk = u64(gid)
		if gb, err = w.data.CreateBucket(gk); err != nil {
			return err
		}
		if err := w.graphs.Put([]byte(g), gk); err != nil {
			return err
		}
	} else {
		gk = bytes.Clone(gk)
		if gb = w.data.Bucket(gk); gb == nil {
			return fmt.Errorf("%w: graph %s has no index", graphstore.ErrCorrupt, g)
		}
	}
	if rid := w.lookup(r); rid != 0 {
		var doomed [][]byte
		c := gb.Cursor()
		for _, sid := range closure(gb, rid) {
			prefix := u64(sid)
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				doomed = append(doomed, bytes.Clone(k))
			}
		}
		for _, k := range doomed {
			if err := gb.Delete(k); err != nil {
				return err
			}
			w.refKey(k, -1)
		}
	}
	blanks := map[string]uint64{}
	node := func(t rdf.Term) (uint64, error) {
		if !t.IsBlank() {
			return w.intern(t)
		}
		id, ok := blanks[t.Value]
		if !ok {
			id = w.alloc(true)
			blanks[t.Value] = id
		}
		return id, nil
	}
	if err := w.insertSorted(gb, ts, node); err != nil {
		return err
	}
	if k, _ := gb.Cursor().First(); k == nil {
		if err := w.data.DeleteBucket(gk); err != nil {
			return err
		}
		if err := w.graphs.Delete([]byte(g)); err != nil {
			return err
		}
	}
	return nil
}

// insertSorted puts the keys of ts into gb in key order: bbolt splits a
// node only at commit, so keys put in another order each move the node's
// tail, and a fragment of n statements cost O(n²) (80,000 statements of
// one resource: 9.4 s, then 0.6 s; see also intern).
func (w *wtx) insertSorted(gb *bbolt.Bucket, ts []rdf.Triple, node func(rdf.Term) (uint64, error)) error {
	keys := make([][]byte, 0, len(ts))
	for _, t := range ts {
		k, err := w.key(t, node)
		if err != nil {
			return err
		}
		keys = append(keys, k)
	}
	slices.SortFunc(keys, bytes.Compare)
	keys = slices.CompactFunc(keys, bytes.Equal)
	for _, k := range keys {
		if _, err := w.insert(gb, k); err != nil {
			return err
		}
	}
	return nil
}

// key returns t's index key; node gives subjects, predicates and objects
// not inlined their ids.
func (w *wtx) key(t rdf.Triple, node func(rdf.Term) (uint64, error)) ([]byte, error) {
	s, err := node(t.S)
	if err != nil {
		return nil, err
	}
	p, err := node(t.P)
	if err != nil {
		return nil, err
	}
	o := inline(t.O)
	if o == nil {
		id, err := node(t.O)
		if err != nil {
			return nil, err
		}
		o = idObject(id)
	}
	return tripleKey(s, p, o), nil
}

func newGraphID(tx *bbolt.Tx) (uint64, error) {
	meta := tx.Bucket(bMeta)
	gid := be(meta.Get(kGraph)) + 1
	return gid, meta.Put(kGraph, u64(gid))
}

// usable fails when ctx is done or the store is closed.
func (s *Store) usable(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return graphstore.ErrClosed
	}
	return nil
}

// testHookLoaded, when set (by tests only), is called after each batch
// ReplaceGraph committed, with the triples loaded so far: a panic there
// is a crash in the middle of a load, which a source's panic no longer
// is (the snapshot is spooled first).
var testHookLoaded func(n int)

// ReplaceGraph implements graphstore.Store: see doc.go for how it keeps
// memory bounded and the old graph intact until the end.
func (s *Store) ReplaceGraph(ctx context.Context, g string, ts iter.Seq2[rdf.Triple, error]) (err error) {
	if err := graphstore.CheckGraph(g); err != nil {
		return err
	}
	if err := s.usable(ctx); err != nil {
		return err
	}
	// Received whole before anything is written: a snapshot refused part
	// way leaves the file as it was (see spool.go).
	sp, err := s.spoolTriples(ts, ctx.Err)
	if err != nil {
		return err
	}
	defer sp.close()
	ts = sp.triples()
	var gid uint64
	err = s.update(func(tx *bbolt.Tx) error {
		var err error
		if gid, err = newGraphID(tx); err != nil {
			return err
		}
		if _, err := tx.Bucket(bData).CreateBucket(u64(gid)); err != nil {
			return err
		}
		_, err = tx.Bucket(bTmp).CreateBucket(u64(gid))
		return err
	})
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			// Leave nothing behind; if this fails too, Open will.
			if derr := s.dropGraph(gid); derr != nil && !errors.Is(derr, graphstore.ErrClosed) {
				err = fmt.Errorf("%w (and deleting the partial graph: %w)", err, derr)
			}
		}
	}()
	batch := make([]rdf.Triple, 0, min(s.batch, 4096))
	size := s.batch
	n := 0
	for t, terr := range ts {
		if terr != nil {
			return terr
		}
		if err := graphstore.CheckTriple(t); err != nil {
			return err
		}
		if n++; n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		batch = append(batch, t)
		if len(batch) >= size {
			nodes, err := s.load(ctx, gid, batch)
			if err != nil {
				return err
			}
			size = nextBatch(size, nodes, s.batch)
			if testHookLoaded != nil {
				testHookLoaded(n)
			}
			batch = batch[:0]
		}
	}
	if _, err := s.load(ctx, gid, batch); err != nil {
		return err
	}
	if testHookLoaded != nil {
		testHookLoaded(n)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// The swap: from here on the call succeeds, whatever happens to ctx.
	var old uint64
	err = s.update(func(tx *bbolt.Tx) error {
		graphs, data := tx.Bucket(bGraphs), tx.Bucket(bData)
		old = be(graphs.Get([]byte(g)))
		gk := u64(gid)
		if err := tx.Bucket(bTmp).DeleteBucket(gk); err != nil {
			return err
		}
		gb := data.Bucket(gk)
		if gb == nil {
			return fmt.Errorf("%w: graph id %d vanished while loading", graphstore.ErrCorrupt, gid)
		}
		if k, _ := gb.Cursor().First(); k == nil {
			if err := data.DeleteBucket(gk); err != nil {
				return err
			}
			return graphs.Delete([]byte(g))
		}
		return graphs.Put([]byte(g), gk)
	})
	if err != nil {
		return err
	}
	if old != 0 {
		// The old graph is garbage now; if this fails, Open collects it.
		if err := s.dropGraph(old); err != nil && !errors.Is(err, graphstore.ErrClosed) {
			return fmt.Errorf("graph %s replaced, but deleting the old content: %w", g, err)
		}
	}
	return nil
}

// labelKey is the tmp bucket key of a blank node label: the label, or a
// hash of it when it is too long to be a bbolt key (a hostile snapshot
// may have any label).
func labelKey(l string) []byte {
	if len(l) <= maxKeyLen {
		return append([]byte{'L'}, l...)
	}
	h := sha256.Sum256([]byte(l))
	return append([]byte{'H'}, h[:]...)
}

// maxNodes is how many B-tree nodes one load transaction should touch.
// A commit holds every touched node in memory and rewrites its page, and
// as the dictionary grows a batch's random lookups and inserts touch more
// of them: ReplaceGraph shrinks its batches to stay near this bound, so
// its memory does not grow with the store (about 10 KiB per node).
const maxNodes = 2048

// nextBatch is the size of the next load batch after one of size that
// touched nodes B-tree nodes: halved above maxNodes, grown by a quarter
// well below it, between 500 and max.
func nextBatch(size, nodes, limit int) int {
	switch {
	case nodes > maxNodes:
		size /= 2
	case nodes < maxNodes/2:
		size += size / 4
	}
	return min(max(size, 500), limit)
}

// load writes one batch of a ReplaceGraph into graph id gid and returns
// how many B-tree nodes the transaction touched.
func (s *Store) load(ctx context.Context, gid uint64, batch []rdf.Triple) (nodes int, err error) {
	if len(batch) == 0 {
		return 0, nil
	}
	err = s.update(func(tx *bbolt.Tx) error {
		defer func() {
			st := tx.Stats()
			nodes = int(st.GetNodeCount())
		}()
		if err := ctx.Err(); err != nil {
			return err
		}
		w := newWtx(tx)
		gk := u64(gid)
		gb, labels := w.data.Bucket(gk), tx.Bucket(bTmp).Bucket(gk)
		if gb == nil || labels == nil {
			return fmt.Errorf("%w: graph id %d vanished while loading", graphstore.ErrCorrupt, gid)
		}
		gb.FillPercent = 0.9 // new ids grow, so keys arrive mostly in order
		blanks := map[string]uint64{}
		var newLabels []string
		node := func(t rdf.Term) (uint64, error) {
			if !t.IsBlank() {
				return w.intern(t)
			}
			if id, ok := blanks[t.Value]; ok {
				return id, nil
			}
			id := be(labels.Get(labelKey(t.Value)))
			if id == 0 {
				id = w.alloc(true)
				newLabels = append(newLabels, t.Value)
			}
			blanks[t.Value] = id
			return id, nil
		}
		if err := w.insertSorted(gb, batch, node); err != nil {
			return err
		}
		type label struct {
			key []byte
			id  uint64
		}
		put := make([]label, len(newLabels))
		for i, l := range newLabels {
			put[i] = label{labelKey(l), blanks[l]}
		}
		slices.SortFunc(put, func(a, b label) int { return bytes.Compare(a.key, b.key) })
		for _, l := range put {
			if err := labels.Put(l.key, u64(l.id)); err != nil {
				return err
			}
		}
		s.releaseMapped()
		return w.finish()
	})
	return nodes, err
}

// dropGraph deletes the keys of graph id gid in batches, then the id.
func (s *Store) dropGraph(gid uint64) error {
	gk := u64(gid)
	for done := false; !done; {
		err := s.update(func(tx *bbolt.Tx) error {
			w := newWtx(tx)
			if tmp := tx.Bucket(bTmp); tmp.Bucket(gk) != nil {
				if err := tmp.DeleteBucket(gk); err != nil {
					return err
				}
			}
			gb := w.data.Bucket(gk)
			if gb == nil {
				done = true
				return nil
			}
			var doomed [][]byte
			c := gb.Cursor()
			for k, _ := c.First(); k != nil && len(doomed) < s.batch; k, _ = c.Next() {
				doomed = append(doomed, bytes.Clone(k))
			}
			for _, k := range doomed {
				if err := gb.Delete(k); err != nil {
					return err
				}
				w.refKey(k, -1) // a bad key names no terms
			}
			s.releaseMapped()
			if len(doomed) < s.batch {
				if err := w.data.DeleteBucket(gk); err != nil {
					return err
				}
				done = true
			}
			return w.finish()
		})
		if err != nil {
			return err
		}
	}
	return nil
}
