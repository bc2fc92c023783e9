package pgstore

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// copyMin is the number of rows from which a batch's inserts use COPY
// instead of one INSERT ... SELECT FROM unnest(arrays): COPY costs two more
// round trips but loads several times faster per row.
const copyMin = 256

// Times are bigint nanoseconds since the Unix epoch. A zero time.Time is
// NULL in the nullable resource columns; a zero change datetime (which
// the scanner never writes) is math.MinInt64, so that it still orders
// first.
func ns(t time.Time) pgtype.Int8 {
	if t.IsZero() {
		return pgtype.Int8{}
	}
	return pgtype.Int8{Int64: t.UnixNano(), Valid: true}
}

func fromNS(v pgtype.Int8) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return time.Unix(0, v.Int64).UTC()
}

func changeNS(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixNano()
}

func fromChangeNS(v int64) time.Time {
	if v == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, v).UTC()
}

func kindByte(k rs.Change) byte {
	switch k {
	case rs.Created:
		return 'c'
	case rs.Updated:
		return 'u'
	}
	return 'd'
}

const invCols = `path, size, mtime, inode, md5, sha256, type, lastmod, changed`

var invColNames = []string{"set_id", "path", "size", "mtime", "inode", "md5", "sha256", "type", "lastmod", "changed"}

var jnlColNames = []string{"set_id", "seq", "time", "kind", "path", "size", "mtime", "inode", "md5", "sha256", "type", "lastmod", "changed"}

// resCols are resources as column arrays, the parameters of the
// unnest(...) statements.
type resCols struct {
	path, md5, sha256, typ [][]byte
	size, inode            []int64
	mtime, lastmod, chgd   []pgtype.Int8
}

func (c *resCols) add(r *store.Resource) {
	c.path = append(c.path, []byte(r.Path))
	c.size = append(c.size, r.Size)
	c.mtime = append(c.mtime, ns(r.ModTime))
	c.inode = append(c.inode, int64(r.Inode))
	c.md5 = append(c.md5, r.MD5[:])
	c.sha256 = append(c.sha256, r.SHA256[:])
	c.typ = append(c.typ, []byte(r.Type))
	c.lastmod = append(c.lastmod, ns(r.LastMod))
	c.chgd = append(c.chgd, ns(r.Changed))
}

func (c *resCols) args() []any {
	return []any{c.path, c.size, c.mtime, c.inode, c.md5, c.sha256, c.typ, c.lastmod, c.chgd}
}

func invRow(id int32, r *store.Resource) []any {
	return []any{id, []byte(r.Path), r.Size, ns(r.ModTime), int64(r.Inode), r.MD5[:], r.SHA256[:], []byte(r.Type), ns(r.LastMod), ns(r.Changed)}
}

const unnestRes = `$2::bytea[], $3::int8[], $4::int8[], $5::int8[], $6::bytea[], $7::bytea[], $8::bytea[], $9::int8[], $10::int8[]`

const (
	sqlInsertInv = `INSERT INTO rs_inventory (set_id, ` + invCols + `) SELECT $1, * FROM unnest(` + unnestRes + `)`
	sqlUpdateInv = `UPDATE rs_inventory AS i SET size = u.size, mtime = u.mtime, inode = u.inode, md5 = u.md5,
		sha256 = u.sha256, type = u.type, lastmod = u.lastmod, changed = u.changed
		FROM unnest(` + unnestRes + `) AS u(` + invCols + `)
		WHERE i.set_id = $1 AND i.path = u.path`
	sqlDeleteInv = `DELETE FROM rs_inventory WHERE set_id = $1 AND path = ANY($2::bytea[])`
	sqlInsertJnl = `INSERT INTO rs_journal (set_id, seq, time, kind, ` + invCols + `)
		SELECT $1, u.seq, u.time, u.kind::"char", u.path, u.size, u.mtime, u.inode, u.md5, u.sha256, u.type, u.lastmod, u.changed
		FROM unnest($11::int8[], $12::int8[], $13::text[], ` + unnestRes + `) AS u(seq, time, kind, ` + invCols + `)`
	sqlHead       = `SELECT first_seq, last_seq, last_time, lead_epoch FROM rs_sets WHERE id = $1 FOR UPDATE`
	sqlExisting   = `SELECT path FROM rs_inventory WHERE set_id = $1 AND path = ANY($2::bytea[])`
	sqlSetHead    = `UPDATE rs_sets SET first_seq = $2, last_seq = $3, last_time = $4, resources = resources + $5 WHERE id = $1`
	sqlPutMeta    = `INSERT INTO rs_meta (set_id, key, value) VALUES ($1, $2, $3) ON CONFLICT (set_id, key) DO UPDATE SET value = excluded.value`
	sqlDeleteMeta = `DELETE FROM rs_meta WHERE set_id = $1 AND key = $2`
	sqlNotify     = `SELECT pg_notify($1, '')`
)

// channel is the NOTIFY channel of the set.
func (s *Store) channel() string { return fmt.Sprintf("rs_source_%d", s.id) }

// entry is the fate of one path in a batch.
type entry struct {
	before  bool            // in the inventory before the batch
	present bool            // in the inventory after the changes so far
	final   *store.Resource // the record to write; nil: unchanged (or absent)
}

// Apply implements store.Store. The set's head row is locked FOR UPDATE
// first, so that writers of one set are serialised and sequence numbers
// are consecutive; the paths the batch names are looked up in one query
// (skipped when the batch only creates: the primary key then refuses a
// path that exists), the batch is simulated in memory (conflicts and
// time order are found before anything is written), and the result is
// written with COPY (large inserts) and array statements, in one
// transaction that also sends the set's notification.
func (s *Store) Apply(ctx context.Context, b store.Batch) (first, last uint64, err error) {
	if err := s.check(ctx); err != nil {
		return 0, 0, err
	}
	onlyCreates := len(b.Touch) == 0
	for i := range b.Changes {
		c := &b.Changes[i]
		if !c.Kind.Valid() || c.Resource.Path == "" {
			return 0, 0, fmt.Errorf("%w: change %d: kind %q path %q", store.ErrConflict, i, c.Kind, c.Resource.Path)
		}
		if i > 0 && c.Time.Before(b.Changes[i-1].Time) {
			return 0, 0, fmt.Errorf("%w: change %d at %v follows one at %v", store.ErrTimeOrder, i, c.Time, b.Changes[i-1].Time)
		}
		onlyCreates = onlyCreates && c.Kind == rs.Created
	}
	if len(b.Changes) == 0 && len(b.Touch) == 0 && len(b.Meta) == 0 {
		return 0, 0, nil
	}
	var inserted int
	err = pgx.BeginTxFunc(ctx, s.pool, txRC, func(tx pgx.Tx) error {
		var err error
		first, last, inserted, err = s.apply(ctx, tx, &b, onlyCreates)
		return err
	})
	if err != nil {
		return 0, 0, s.wrap(ctx, "apply", err)
	}
	s.grew(inserted)
	return first, last, nil
}

func (s *Store) apply(ctx context.Context, tx pgx.Tx, b *store.Batch, onlyCreates bool) (first, last uint64, inserted int, err error) {
	// The head row lock, and the existence of the batch's paths.
	var lookup [][]byte
	entries := make(map[string]*entry, len(b.Changes)+len(b.Touch))
	order := make([]string, 0, len(b.Changes)+len(b.Touch))
	note := func(p string) *entry {
		e := entries[p]
		if e == nil {
			e = &entry{}
			entries[p] = e
			order = append(order, p)
			if !onlyCreates {
				lookup = append(lookup, []byte(p))
			}
		}
		return e
	}
	for i := range b.Changes {
		note(b.Changes[i].Resource.Path)
	}
	for i := range b.Touch {
		note(b.Touch[i].Path)
	}
	var qb pgx.Batch
	qb.Queue(sqlHead, s.id)
	if len(lookup) > 0 {
		qb.Queue(sqlExisting, s.id, lookup)
	}
	br := tx.SendBatch(ctx, &qb)
	var firstSeq, lastSeq, lastTime, epoch int64
	if err := br.QueryRow().Scan(&firstSeq, &lastSeq, &lastTime, &epoch); err != nil {
		br.Close()
		return 0, 0, 0, fmt.Errorf("reading the set's head: %w", err)
	}
	// Fencing: a Store that took the scanner role writes only while no
	// one took it after it.
	if mine := s.epoch.Load(); mine != 0 && mine != epoch {
		br.Close()
		return 0, 0, 0, fmt.Errorf("%w: the scanner role was taken by another process (lead %d, ours %d)", store.ErrLocked, epoch, mine)
	}
	if len(lookup) > 0 {
		rows, _ := br.Query()
		var p []byte
		_, err := pgx.ForEachRow(rows, []any{&p}, func() error {
			e := entries[string(p)]
			e.before, e.present = true, true
			return nil
		})
		if err != nil {
			br.Close()
			return 0, 0, 0, err
		}
	}
	if err := br.Close(); err != nil {
		return 0, 0, 0, err
	}

	if len(b.Changes) > 0 {
		if b.Baseline && lastSeq > 0 {
			return 0, 0, 0, fmt.Errorf("%w: a baseline batch after journal record %d", store.ErrConflict, lastSeq)
		}
		if lt := fromChangeNS(lastTime); lastSeq > 0 && b.Changes[0].Time.Before(lt) {
			return 0, 0, 0, fmt.Errorf("%w: %v is before seq %d at %v", store.ErrTimeOrder, b.Changes[0].Time, lastSeq, lt)
		}
	}

	// Simulate the batch: conflicts are found before anything is written.
	var jnl []store.Change
	if !b.Baseline {
		jnl = make([]store.Change, 0, len(b.Changes))
	}
	next := uint64(lastSeq) + 1
	for i := range b.Changes {
		c := b.Changes[i]
		e := entries[c.Resource.Path]
		if (c.Kind == rs.Created) == e.present {
			return 0, 0, 0, fmt.Errorf("%w: %s of %q (in inventory: %v)", store.ErrConflict, c.Kind, c.Resource.Path, e.present)
		}
		if c.Kind == rs.Deleted {
			e.present, e.final = false, nil
		} else {
			c.Resource.Changed = c.Time
			r := c.Resource
			e.present, e.final = true, &r
		}
		if b.Baseline {
			continue
		}
		c.Seq = next
		jnl = append(jnl, c)
		if first == 0 {
			first = next
		}
		last = next
		next++
	}
	for i := range b.Touch {
		r := b.Touch[i]
		e := entries[r.Path]
		if !e.present {
			return 0, 0, 0, fmt.Errorf("%w: touch of %q, not in the inventory", store.ErrConflict, r.Path)
		}
		e.final = &r
	}

	var ins, upd []*store.Resource
	var del [][]byte
	for _, p := range order {
		e := entries[p]
		switch {
		case e.before && !e.present:
			del = append(del, []byte(p))
		case e.before && e.final != nil:
			upd = append(upd, e.final)
		case !e.before && e.present:
			ins = append(ins, e.final)
		}
	}

	// Write.
	if len(ins) >= copyMin {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"rs_inventory"}, invColNames,
			pgx.CopyFromSlice(len(ins), func(i int) ([]any, error) { return invRow(s.id, ins[i]), nil }))
		if err != nil {
			return 0, 0, 0, err
		}
	}
	if len(jnl) >= copyMin {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"rs_journal"}, jnlColNames,
			pgx.CopyFromSlice(len(jnl), func(i int) ([]any, error) {
				c := &jnl[i]
				r := &c.Resource
				return []any{s.id, int64(c.Seq), changeNS(c.Time), kindByte(c.Kind), []byte(r.Path), r.Size, ns(r.ModTime),
					int64(r.Inode), r.MD5[:], r.SHA256[:], []byte(r.Type), ns(r.LastMod), ns(r.Changed)}, nil
			}))
		if err != nil {
			return 0, 0, 0, err
		}
	}
	var wb pgx.Batch
	if len(del) > 0 {
		wb.Queue(sqlDeleteInv, s.id, del)
	}
	if len(ins) > 0 && len(ins) < copyMin {
		var c resCols
		for _, r := range ins {
			c.add(r)
		}
		wb.Queue(sqlInsertInv, append([]any{s.id}, c.args()...)...)
	}
	if len(upd) > 0 {
		var c resCols
		for _, r := range upd {
			c.add(r)
		}
		wb.Queue(sqlUpdateInv, append([]any{s.id}, c.args()...)...)
	}
	if len(jnl) > 0 && len(jnl) < copyMin {
		var c resCols
		seqs := make([]int64, len(jnl))
		times := make([]int64, len(jnl))
		kinds := make([]string, len(jnl))
		for i := range jnl {
			seqs[i], times[i], kinds[i] = int64(jnl[i].Seq), changeNS(jnl[i].Time), string(kindByte(jnl[i].Kind))
			c.add(&jnl[i].Resource)
		}
		wb.Queue(sqlInsertJnl, append(append([]any{s.id}, c.args()...), seqs, times, kinds)...)
	}
	for k, v := range b.Meta {
		if v == nil {
			wb.Queue(sqlDeleteMeta, s.id, k)
		} else {
			wb.Queue(sqlPutMeta, s.id, k, append([]byte{}, v...))
		}
	}
	if delta := len(ins) - len(del); len(jnl) > 0 || delta != 0 {
		if len(jnl) > 0 {
			if firstSeq == 0 {
				firstSeq = int64(first)
			}
			lastSeq, lastTime = int64(last), changeNS(jnl[len(jnl)-1].Time)
		}
		wb.Queue(sqlSetHead, s.id, firstSeq, lastSeq, lastTime, delta)
	}
	wb.Queue(sqlNotify, s.channel())
	if err := tx.SendBatch(ctx, &wb).Close(); err != nil {
		return 0, 0, 0, err
	}
	return first, last, len(ins) + len(jnl), nil
}
