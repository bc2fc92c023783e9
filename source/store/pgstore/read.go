package pgstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// pageSize is how many rows one query of ResourcesIn and Journal (and one
// FETCH of Resources) reads.
const pageSize = 1000

// resScan scans the inventory columns of a row.
type resScan struct {
	path, md5, sha256, typ []byte
	size, inode            int64
	mtime, lastmod, chgd   pgtype.Int8
}

func (r *resScan) dest() []any {
	return []any{&r.path, &r.size, &r.mtime, &r.inode, &r.md5, &r.sha256, &r.typ, &r.lastmod, &r.chgd}
}

func (r *resScan) resource() (store.Resource, error) {
	res := store.Resource{
		Path: string(r.path), Size: r.size, ModTime: fromNS(r.mtime), Inode: uint64(r.inode),
		Type: string(r.typ), LastMod: fromNS(r.lastmod), Changed: fromNS(r.chgd),
	}
	if len(r.md5) != len(res.MD5) || len(r.sha256) != len(res.SHA256) {
		return store.Resource{}, fmt.Errorf("%w: record %q has hashes of %d and %d bytes", store.ErrCorrupt, r.path, len(r.md5), len(r.sha256))
	}
	copy(res.MD5[:], r.md5)
	copy(res.SHA256[:], r.sha256)
	return res, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, path string) (store.Resource, error) {
	if err := s.check(ctx); err != nil {
		return store.Resource{}, err
	}
	var r resScan
	err := s.pool.QueryRow(ctx, `SELECT `+invCols+` FROM rs_inventory WHERE set_id = $1 AND path = $2`, s.id, []byte(path)).Scan(r.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Resource{}, fmt.Errorf("%w: %q", store.ErrNotFound, path)
	}
	if err != nil {
		return store.Resource{}, s.wrap(ctx, "get", err)
	}
	return r.resource()
}

// Resources implements store.Store: one REPEATABLE READ, READ ONLY
// transaction (one snapshot) and a cursor read pageSize rows per FETCH, so
// that memory does not grow with the inventory. The transaction (and a
// connection of the pool) is held until the loop ends.
func (s *Store) Resources(ctx context.Context) iter.Seq2[store.Resource, error] {
	return func(yield func(store.Resource, error) bool) {
		if err := s.check(ctx); err != nil {
			yield(store.Resource{}, err)
			return
		}
		stopped := false
		err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `DECLARE rs_resources NO SCROLL CURSOR FOR
				SELECT `+invCols+` FROM rs_inventory WHERE set_id = $1 ORDER BY path`, s.id); err != nil {
				return err
			}
			page := make([]store.Resource, 0, pageSize)
			for {
				page = page[:0]
				rows, _ := tx.Query(ctx, fmt.Sprintf(`FETCH %d FROM rs_resources`, pageSize))
				if err := readResources(rows, &page); err != nil {
					return err
				}
				for _, r := range page {
					if !yield(r, nil) {
						stopped = true
						return nil
					}
				}
				if len(page) < pageSize {
					return nil
				}
			}
		})
		if err != nil && !stopped {
			yield(store.Resource{}, s.wrap(ctx, "resources", err))
		}
	}
}

func readResources(rows pgx.Rows, page *[]store.Resource) error {
	var r resScan
	_, err := pgx.ForEachRow(rows, r.dest(), func() error {
		res, err := r.resource()
		*page = append(*page, res)
		return err
	})
	return err
}

// ResourcesIn implements store.Store: keyset pages of pageSize rows, one
// statement (and snapshot) each, no transaction held between pages.
func (s *Store) ResourcesIn(ctx context.Context, from, to string) iter.Seq2[store.Resource, error] {
	return func(yield func(store.Resource, error) bool) {
		page := make([]store.Resource, 0, pageSize)
		next, op := []byte(from), ">="
		for {
			if err := s.check(ctx); err != nil {
				yield(store.Resource{}, err)
				return
			}
			page = page[:0]
			var rows pgx.Rows
			q := `SELECT ` + invCols + ` FROM rs_inventory WHERE set_id = $1 AND path ` + op + ` $2`
			if to != "" {
				rows, _ = s.pool.Query(ctx, q+` AND path < $3 ORDER BY path LIMIT `+fmt.Sprint(pageSize), s.id, next, []byte(to))
			} else {
				rows, _ = s.pool.Query(ctx, q+` ORDER BY path LIMIT `+fmt.Sprint(pageSize), s.id, next)
			}
			if err := readResources(rows, &page); err != nil {
				yield(store.Resource{}, s.wrap(ctx, "resources in range", err))
				return
			}
			for _, r := range page {
				if !yield(r, nil) {
					return
				}
			}
			if len(page) < pageSize {
				return
			}
			next, op = []byte(page[len(page)-1].Path), ">"
		}
	}
}

const jnlCols = `seq, time, kind, ` + invCols

func readChanges(rows pgx.Rows, page *[]store.Change) error {
	var r resScan
	var seq, t int64
	var kind byte
	dest := append([]any{&seq, &t, &kind}, r.dest()...)
	_, err := pgx.ForEachRow(rows, dest, func() error {
		res, err := r.resource()
		if err != nil {
			return err
		}
		c := store.Change{Seq: uint64(seq), Time: fromChangeNS(t), Resource: res}
		switch kind {
		case 'c':
			c.Kind = rs.Created
		case 'u':
			c.Kind = rs.Updated
		case 'd':
			c.Kind = rs.Deleted
		default:
			return fmt.Errorf("%w: journal record %d has kind %q", store.ErrCorrupt, seq, kind)
		}
		*page = append(*page, c)
		return nil
	})
	return err
}

// Journal implements store.Store: keyset pages by seq on the primary key.
func (s *Store) Journal(ctx context.Context, from uint64) iter.Seq2[store.Change, error] {
	return func(yield func(store.Change, error) bool) {
		next := int64(min(max(from, 1), math.MaxInt64))
		page := make([]store.Change, 0, pageSize)
		for {
			if err := s.check(ctx); err != nil {
				yield(store.Change{}, err)
				return
			}
			page = page[:0]
			rows, _ := s.pool.Query(ctx, `SELECT `+jnlCols+` FROM rs_journal WHERE set_id = $1 AND seq >= $2 ORDER BY seq LIMIT `+fmt.Sprint(pageSize), s.id, next)
			if err := readChanges(rows, &page); err != nil {
				yield(store.Change{}, s.wrap(ctx, "journal", err))
				return
			}
			for _, c := range page {
				if !yield(c, nil) {
					return
				}
			}
			if len(page) < pageSize {
				return
			}
			next = int64(page[len(page)-1].Seq) + 1
		}
	}
}

// JournalBetween implements store.Store: keyset pages on the index
// (set_id, time, seq). Datetimes never decrease with seq, so (time, seq)
// order is seq order.
func (s *Store) JournalBetween(ctx context.Context, from, until time.Time) iter.Seq2[store.Change, error] {
	return func(yield func(store.Change, error) bool) {
		lo := changeNS(from)
		hi := int64(math.MaxInt64)
		if !until.IsZero() {
			hi = changeNS(until)
		}
		var lastT, lastSeq int64
		page := make([]store.Change, 0, pageSize)
		for firstPage := true; ; firstPage = false {
			if err := s.check(ctx); err != nil {
				yield(store.Change{}, err)
				return
			}
			page = page[:0]
			var rows pgx.Rows
			if firstPage {
				rows, _ = s.pool.Query(ctx, `SELECT `+jnlCols+` FROM rs_journal WHERE set_id = $1 AND time >= $2 AND time < $3
					ORDER BY time, seq LIMIT `+fmt.Sprint(pageSize), s.id, lo, hi)
			} else {
				rows, _ = s.pool.Query(ctx, `SELECT `+jnlCols+` FROM rs_journal WHERE set_id = $1 AND (time, seq) > ($2, $3) AND time < $4
					ORDER BY time, seq LIMIT `+fmt.Sprint(pageSize), s.id, lastT, lastSeq, hi)
			}
			if err := readChanges(rows, &page); err != nil {
				yield(store.Change{}, s.wrap(ctx, "journal between", err))
				return
			}
			for _, c := range page {
				if !yield(c, nil) {
					return
				}
			}
			if len(page) < pageSize {
				return
			}
			c := page[len(page)-1]
			lastT, lastSeq = changeNS(c.Time), int64(c.Seq)
		}
	}
}

// Stats implements store.Store: the set's head row, O(1).
func (s *Store) Stats(ctx context.Context) (store.Stats, error) {
	if err := s.check(ctx); err != nil {
		return store.Stats{}, err
	}
	var n, first, last, lt int64
	err := s.pool.QueryRow(ctx, `SELECT resources, first_seq, last_seq, last_time FROM rs_sets WHERE id = $1`, s.id).Scan(&n, &first, &last, &lt)
	if err != nil {
		return store.Stats{}, s.wrap(ctx, "stats", err)
	}
	st := store.Stats{Resources: int(n), FirstSeq: uint64(first), LastSeq: uint64(last)}
	if last > 0 {
		st.LastTime = fromChangeNS(lt)
	}
	return st, nil
}

// GetMeta implements store.Store.
func (s *Store) GetMeta(ctx context.Context, key string) ([]byte, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	var v []byte
	err := s.pool.QueryRow(ctx, `SELECT value FROM rs_meta WHERE set_id = $1 AND key = $2`, s.id, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%w: meta %q", store.ErrNotFound, key)
	}
	if err != nil {
		return nil, s.wrap(ctx, "get meta", err)
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// PutMeta implements store.Store (an Apply of the one meta value: it
// notifies the set's watchers).
func (s *Store) PutMeta(ctx context.Context, key string, value []byte) error {
	_, _, err := s.Apply(ctx, store.Batch{Meta: map[string][]byte{key: value}})
	return err
}
