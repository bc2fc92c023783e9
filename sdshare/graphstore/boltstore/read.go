package boltstore

import (
	"bytes"
	"context"
	"iter"

	"go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// graphBucket returns g's index bucket in tx, or nil.
func graphBucket(tx *bbolt.Tx, g string) *bbolt.Bucket {
	gk := tx.Bucket(bGraphs).Get([]byte(g))
	if gk == nil {
		return nil
	}
	return tx.Bucket(bData).Bucket(gk)
}

// lookupID returns the id of an IRI or literal in tx, or 0.
func lookupID(tx *bbolt.Tx, t rdf.Term) uint64 {
	return be(tx.Bucket(bT2I).Get(dictKey(encodeTerm(nil, t))))
}

// Fragment implements graphstore.Store.
func (s *Store) Fragment(ctx context.Context, g string, r rdf.Term) ([]rdf.Triple, error) {
	if err := graphstore.CheckResource(g, r); err != nil {
		return nil, err
	}
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	var out []rdf.Triple
	err := s.view(func(tx *bbolt.Tx) error {
		gb := graphBucket(tx, g)
		if gb == nil {
			return nil
		}
		rid := lookupID(tx, r)
		if rid == 0 {
			return nil
		}
		d := newDecoder(tx)
		c := gb.Cursor()
		for _, sid := range closure(gb, rid) {
			prefix := u64(sid)
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				t, err := d.triple(k)
				if err != nil {
					return err
				}
				out = append(out, t)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Triples implements graphstore.Store: one read transaction for the loop.
func (s *Store) Triples(ctx context.Context, g string) iter.Seq2[rdf.Triple, error] {
	return func(yield func(rdf.Triple, error) bool) {
		if err := graphstore.CheckGraph(g); err != nil {
			yield(rdf.Triple{}, err)
			return
		}
		if err := s.usable(ctx); err != nil {
			yield(rdf.Triple{}, err)
			return
		}
		stopped := false
		err := s.view(func(tx *bbolt.Tx) error {
			gb := graphBucket(tx, g)
			if gb == nil {
				return nil
			}
			d := newDecoder(tx)
			c := gb.Cursor()
			n := 0
			for k, _ := c.First(); k != nil; k, _ = c.Next() {
				if n++; n%1024 == 0 {
					if err := ctx.Err(); err != nil {
						return err
					}
					if n%(64<<10) == 0 {
						s.releaseMapped()
					}
				}
				t, err := d.triple(k)
				if err != nil {
					return err
				}
				if !yield(t, nil) {
					stopped = true
					return nil
				}
			}
			return nil
		})
		if err != nil && !stopped {
			yield(rdf.Triple{}, err)
		}
	}
}

// Graphs implements graphstore.Store. bbolt orders keys by bytes, which is
// Go's string order.
func (s *Store) Graphs(ctx context.Context) ([]string, error) {
	if err := s.usable(ctx); err != nil {
		return nil, err
	}
	names := []string{}
	err := s.view(func(tx *bbolt.Tx) error {
		return tx.Bucket(bGraphs).ForEach(func(k, _ []byte) error {
			names = append(names, string(k))
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return names, nil
}
