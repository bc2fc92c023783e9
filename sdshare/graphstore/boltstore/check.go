package boltstore

import (
	"context"
	"encoding/binary"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// Check verifies the store in one read transaction: that every graph name
// points to a non-empty index and every index has a name, that the
// dictionary's two directions agree, that each term's reference count is
// the number of index keys naming it, and that no id is beyond its
// counter. A ReplaceGraph may run meanwhile. Its cost is a full scan with a map of every term id; it is for
// tests and for `doctor`-style checks, not for every Open. Problems wrap
// graphstore.ErrCorrupt.
func (s *Store) Check(ctx context.Context) error {
	if err := s.usable(ctx); err != nil {
		return err
	}
	return s.view(func(tx *bbolt.Tx) error {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: %s: %s", graphstore.ErrCorrupt, s.path, fmt.Sprintf(format, args...))
		}
		meta := tx.Bucket(bMeta)
		next, lastGraph := be(meta.Get(kNext)), be(meta.Get(kGraph))
		named := map[uint64]string{}
		err := tx.Bucket(bGraphs).ForEach(func(k, v []byte) error {
			gid := be(v)
			if gid == 0 || gid > lastGraph {
				return bad("graph %q has id %x", k, v)
			}
			if other, ok := named[gid]; ok {
				return bad("graphs %q and %q share id %d", other, k, gid)
			}
			named[gid] = string(k)
			return nil
		})
		if err != nil {
			return err
		}
		refs := map[uint64]uint64{}
		data := tx.Bucket(bData)
		n := 0
		err = data.ForEach(func(gk, v []byte) error {
			gid := be(gk)
			name, ok := named[gid]
			loading := tx.Bucket(bTmp).Bucket(gk) != nil // a ReplaceGraph running now
			if v != nil || !ok && !loading {
				return bad("index %x has no graph name", gk)
			}
			gb := data.Bucket(gk)
			empty := true
			err := gb.ForEach(func(k, _ []byte) error {
				if n++; n%4096 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
				}
				empty = false
				sid, pid, oid, ok := splitKey(k)
				if !ok {
					return bad("graph %s: key of %d bytes", name, len(k))
				}
				if isBlank(pid) {
					return bad("graph %s: blank predicate", name)
				}
				if oid == 0 {
					if _, err := decodeTerm(k[17:]); err != nil || len(k) > 16+maxInline {
						return bad("graph %s: inline object %q", name, k[16:])
					}
				}
				for i, id := range [3]uint64{sid, pid, oid} {
					if i == 2 && id == 0 {
						continue // the inline object
					}
					if id>>1 == 0 || id>>1 > next {
						return bad("graph %s: node id %d beyond the counter %d", name, id, next)
					}
					if !isBlank(id) {
						refs[id]++
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			if empty && ok && !loading {
				return bad("graph %s is empty but named", name)
			}
			delete(named, gid)
			return nil
		})
		if err != nil {
			return err
		}
		for gid, name := range named {
			return bad("graph %s has no index %d", name, gid)
		}
		t2i, rc := tx.Bucket(bT2I), tx.Bucket(bRC)
		terms := 0
		err = tx.Bucket(bI2T).ForEach(func(k, enc []byte) error {
			terms++
			id := be(k)
			if isBlank(id) || id == 0 {
				return bad("dictionary id %x", k)
			}
			if _, err := decodeTerm(enc); err != nil {
				return bad("node %d: %v", id, err)
			}
			if got := be(t2i.Get(dictKey(enc))); got != id {
				return bad("node %d: term maps back to %d", id, got)
			}
			c, m := binary.Uvarint(rc.Get(k))
			if m <= 0 || c != refs[id] {
				return bad("node %d: reference count %d, but %d keys name it", id, c, refs[id])
			}
			delete(refs, id)
			return nil
		})
		if err != nil {
			return err
		}
		for id := range refs {
			return bad("node %d is used but not in the dictionary", id)
		}
		if n := t2i.Stats().KeyN; n != terms {
			return bad("%d dictionary keys for %d terms", n, terms)
		}
		if n := rc.Stats().KeyN; n != terms {
			return bad("%d reference counts for %d terms", n, terms)
		}
		return nil
	})
}

// Stats counts what the store holds.
type Stats struct {
	Graphs  int // named, non-empty graphs
	Triples int // over all graphs, including a ReplaceGraph in progress
	Terms   int // IRIs and literals in the dictionary
}

// Stats returns the store's counts, from bbolt's bucket statistics.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	if err := s.usable(ctx); err != nil {
		return Stats{}, err
	}
	var st Stats
	err := s.view(func(tx *bbolt.Tx) error {
		st.Graphs = tx.Bucket(bGraphs).Stats().KeyN
		st.Terms = tx.Bucket(bI2T).Stats().KeyN
		data := tx.Bucket(bData)
		return data.ForEachBucket(func(k []byte) error {
			st.Triples += data.Bucket(k).Stats().KeyN
			return nil
		})
	})
	return st, err
}
