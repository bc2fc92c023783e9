package pgstore

import (
	"context"
	"fmt"
	"hash/fnv"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// subPage is how many subscriptions an iterator reads per query.
const subPage = 256

const subCols = `key, topic, callback, secret, lease, expires, cursor, attempt, first_fail, last_error, next_at`

// subRow scans subCols.
type subRow struct {
	s                          hubstore.Subscription
	expires, firstFail, nextAt pgtype.Timestamptz
	cursor                     int64
}

func (r *subRow) dest() []any {
	return []any{str{&r.s.Key}, str{&r.s.Topic}, str{&r.s.Callback}, str{&r.s.Secret}, &r.s.Lease, &r.expires, &r.cursor,
		&r.s.Attempt, &r.firstFail, str{&r.s.LastError}, &r.nextAt}
}

func (r *subRow) sub() hubstore.Subscription {
	s := r.s
	s.Expires, s.FirstFail, s.NextAt = fromTS(r.expires), fromTS(r.firstFail), fromTS(r.nextAt)
	s.Cursor = uint64(r.cursor)
	return s
}

func collectSubs(rows pgx.Rows) ([]hubstore.Subscription, error) {
	var out []hubstore.Subscription
	var r subRow
	_, err := pgx.ForEachRow(rows, r.dest(), func() error {
		out = append(out, r.sub())
		return nil
	})
	return out, err
}

func (s *Store) PutSubscription(ctx context.Context, r hubstore.Subscription) error {
	if r.Key == "" || r.Topic == "" {
		return invalid("subscription without key or topic")
	}
	if err := fits(r.Topic, r.Key); err != nil {
		return err
	}
	if err := s.check(ctx); err != nil {
		return err
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
INSERT INTO hub_subs (`+subCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (key) DO UPDATE SET topic = excluded.topic, callback = excluded.callback, secret = excluded.secret,
	lease = excluded.lease, expires = excluded.expires, cursor = excluded.cursor, attempt = excluded.attempt,
	first_fail = excluded.first_fail, last_error = excluded.last_error, next_at = excluded.next_at`,
			b(r.Key), b(r.Topic), b(r.Callback), b(r.Secret), r.Lease, ts(r.Expires), int64(r.Cursor), r.Attempt, ts(r.FirstFail), b(r.LastError), ts(r.NextAt))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, notifySQL, evPayload(hubstore.EventSubscriptions))
		return err
	})
	return wrap("put subscription", err)
}

func (s *Store) GetSubscription(ctx context.Context, key string) (hubstore.Subscription, error) {
	if err := s.check(ctx); err != nil {
		return hubstore.Subscription{}, err
	}
	var r subRow
	err := s.pool.QueryRow(ctx, `SELECT `+subCols+` FROM hub_subs WHERE key = $1`, b(key)).Scan(r.dest()...)
	if err == pgx.ErrNoRows {
		return hubstore.Subscription{}, fmt.Errorf("pgstore: subscription %q: %w", key, hubstore.ErrNotFound)
	}
	if err != nil {
		return hubstore.Subscription{}, wrap("get subscription", err)
	}
	return r.sub(), nil
}

func (s *Store) DeleteSubscription(ctx context.Context, key string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM hub_subs WHERE key = $1`, b(key))
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, notifySQL, evPayload(hubstore.EventSubscriptions))
		return err
	})
	return wrap("delete subscription", err)
}

// Subscriptions reads keyset pages on the primary key (all) or on
// (topic, key).
func (s *Store) Subscriptions(ctx context.Context, topic string) iter.Seq2[hubstore.Subscription, error] {
	return func(yield func(hubstore.Subscription, error) bool) {
		after := ""
		for {
			if err := s.check(ctx); err != nil {
				yield(hubstore.Subscription{}, err)
				return
			}
			var rows pgx.Rows
			if topic == "" {
				rows, _ = s.pool.Query(ctx, `SELECT `+subCols+` FROM hub_subs WHERE key > $1 ORDER BY key LIMIT $2`, b(after), subPage)
			} else {
				rows, _ = s.pool.Query(ctx, `SELECT `+subCols+` FROM hub_subs WHERE topic = $1 AND key > $2 ORDER BY key LIMIT $3`, b(topic), b(after), subPage)
			}
			page, err := collectSubs(rows)
			if err != nil {
				yield(hubstore.Subscription{}, wrap("subscriptions", err))
				return
			}
			for _, r := range page {
				if !yield(r, nil) {
					return
				}
			}
			if len(page) < subPage {
				return
			}
			after = page[len(page)-1].Key
		}
	}
}

func (s *Store) CountSubscriptions(ctx context.Context, topic string) (int, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	var n int
	err := s.pool.QueryRow(ctx, `SELECT count(*) FROM hub_subs WHERE topic = $1`, b(topic)).Scan(&n)
	return n, wrap("count subscriptions", err)
}

func (s *Store) Counts(ctx context.Context) (hubstore.Counts, error) {
	if err := s.check(ctx); err != nil {
		return hubstore.Counts{}, err
	}
	var c hubstore.Counts
	err := s.pool.QueryRow(ctx, `
SELECT (SELECT n FROM hub_counts WHERE name = 'subs'), (SELECT n FROM hub_counts WHERE name = 'jobs'),
	(SELECT n FROM hub_counts WHERE name = 'dead')`).Scan(&c.Subscriptions, &c.Jobs, &c.DeadLetters)
	return c, wrap("counts", err)
}

func (s *Store) Subscribe(ctx context.Context, jobID uint64, r hubstore.Subscription, maxPerTopic int) (hubstore.Subscription, error) {
	if r.Key == "" || r.Topic == "" {
		return r, invalid("subscription without key or topic")
	}
	if err := fits(r.Topic, r.Key); err != nil {
		return r, err
	}
	if err := s.check(ctx); err != nil {
		return r, err
	}
	var out hubstore.Subscription
	full := false
	err := s.tx(ctx, func(tx pgx.Tx) error {
		full = false
		tag, err := tx.Exec(ctx, `DELETE FROM hub_jobs WHERE id = $1`, int64(jobID))
		if err != nil {
			return err
		}
		ev := hubstore.Event(0)
		if tag.RowsAffected() > 0 {
			ev |= hubstore.EventJobs
		}
		var row subRow
		err = tx.QueryRow(ctx, `
UPDATE hub_subs SET topic = $2, callback = $3, secret = $4, lease = $5, expires = $6
WHERE key = $1 RETURNING `+subCols, b(r.Key), b(r.Topic), b(r.Callback), b(r.Secret), r.Lease, ts(r.Expires)).Scan(row.dest()...)
		switch {
		case err == pgx.ErrNoRows:
			if maxPerTopic > 0 {
				// Concurrent verifications of one topic (on any node)
				// count one after the other, or each sees room for
				// itself and the limit is passed.
				if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, topicLockClass, topicLockKey(r.Topic)); err != nil {
					return err
				}
				// A range scan of (topic, key), bounded by the limit.
				var n int
				if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM hub_subs WHERE topic = $1 LIMIT $2) x`,
					b(r.Topic), maxPerTopic).Scan(&n); err != nil {
					return err
				}
				if n >= maxPerTopic {
					// Commit the job's deletion (if any) and report
					// ErrTopicFull: not the UPDATE's ErrNoRows.
					full, err = true, nil
					break
				}
			}
			// A concurrent Subscribe of the same key may have inserted
			// meanwhile: then this one updates it, as above.
			err = tx.QueryRow(ctx, `
INSERT INTO hub_subs (`+subCols+`)
VALUES ($1, $2, $3, $4, $5, $6, coalesce((SELECT head FROM hub_topics WHERE topic = $2), 0), 0, NULL, '', NULL)
ON CONFLICT (key) DO UPDATE SET topic = excluded.topic, callback = excluded.callback, secret = excluded.secret,
	lease = excluded.lease, expires = excluded.expires
RETURNING `+subCols, b(r.Key), b(r.Topic), b(r.Callback), b(r.Secret), r.Lease, ts(r.Expires)).Scan(row.dest()...)
			if err != nil {
				return err
			}
			out = row.sub()
			ev |= hubstore.EventSubscriptions
		case err != nil:
			return err
		default:
			out = row.sub()
			ev |= hubstore.EventSubscriptions
		}
		if ev != 0 {
			_, err = tx.Exec(ctx, notifySQL, evPayload(ev))
		}
		return err
	})
	if err != nil {
		return r, wrap("subscribe", err)
	}
	if full {
		return r, fmt.Errorf("pgstore: topic %q: %w", r.Topic, hubstore.ErrTopicFull)
	}
	return out, nil
}

func (s *Store) Unsubscribe(ctx context.Context, jobID uint64, key string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		bt := &pgx.Batch{}
		bt.Queue(`DELETE FROM hub_jobs WHERE id = $1`, int64(jobID))
		bt.Queue(`DELETE FROM hub_subs WHERE key = $1`, b(key))
		bt.Queue(notifySQL, evPayload(hubstore.EventSubscriptions|hubstore.EventJobs))
		return tx.SendBatch(ctx, bt).Close()
	})
	return wrap("unsubscribe", err)
}

// updateSQL applies cursor updates for the holder only (fencing: the
// holder's lease must be live on the server's clock).
const updateSQL = `
UPDATE hub_subs s SET cursor = greatest(s.cursor, u.cursor), attempt = u.attempt, first_fail = u.first_fail,
	last_error = u.last_error, next_at = u.next_at
FROM unnest($2::bytea[], $3::bigint[], $4::int[], $5::timestamptz[], $6::bytea[], $7::timestamptz[])
	AS u(key, cursor, attempt, first_fail, last_error, next_at)
WHERE s.key = u.key AND s.holder = $1 AND s.lease_until > now()
RETURNING s.key`

func (s *Store) UpdateCursors(ctx context.Context, node string, us []hubstore.CursorUpdate) ([]string, error) {
	if node == "" {
		return nil, invalid("empty node name")
	}
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	if len(us) == 0 {
		return nil, nil
	}
	// One row per key: the last update wins, the cursor is the largest.
	idx := make(map[string]int, len(us))
	var (
		keys       [][]byte
		cursors    []int64
		attempts   []int32
		firstFails []pgtype.Timestamptz
		lastErrs   [][]byte
		nextAts    []pgtype.Timestamptz
	)
	for _, u := range us {
		i, ok := idx[u.Key]
		if !ok {
			i = len(keys)
			idx[u.Key] = i
			keys, cursors, attempts = append(keys, b(u.Key)), append(cursors, 0), append(attempts, 0)
			firstFails, lastErrs, nextAts = append(firstFails, pgtype.Timestamptz{}), append(lastErrs, nil), append(nextAts, pgtype.Timestamptz{})
		}
		cursors[i] = max(cursors[i], int64(u.Cursor))
		attempts[i], firstFails[i], lastErrs[i], nextAts[i] = int32(u.Attempt), ts(u.FirstFail), b(u.LastError), ts(u.NextAt)
	}
	rows, _ := s.pool.Query(ctx, updateSQL, node, keys, cursors, attempts, firstFails, lastErrs, nextAts)
	done := make(map[string]bool, len(keys))
	var k string
	if _, err := pgx.ForEachRow(rows, []any{str{&k}}, func() error { done[k] = true; return nil }); err != nil {
		return nil, wrap("update cursors", err)
	}
	var refused []string
	for _, u := range us {
		if !done[u.Key] {
			refused = append(refused, u.Key)
		}
	}
	return refused, nil
}

const deadCols = `id, topic, callback, seq, published, content_type, hub_url, links, body, attempts, first_fail, last_error, at`

type deadRow struct {
	d                 hubstore.DeadLetter
	id, seq           int64
	published, ff, at pgtype.Timestamptz
	links             [][]byte
}

func (r *deadRow) dest() []any {
	return []any{&r.id, str{&r.d.Topic}, str{&r.d.Callback}, &r.seq, &r.published, str{&r.d.ContentType}, str{&r.d.HubURL}, &r.links,
		&r.d.Body, &r.d.Attempts, &r.ff, str{&r.d.LastError}, &r.at}
}

func (r *deadRow) dead() hubstore.DeadLetter {
	d := r.d
	d.ID, d.Seq = uint64(r.id), uint64(r.seq)
	d.Published, d.FirstFail, d.At = fromTS(r.published), fromTS(r.ff), fromTS(r.at)
	d.Links = fromBL(r.links)
	return d
}

func (s *Store) AddDeadLetter(ctx context.Context, node string, d hubstore.DeadLetter, u hubstore.CursorUpdate) (hubstore.DeadLetter, error) {
	if node == "" {
		return d, invalid("empty node name")
	}
	if err := s.check(ctx); err != nil {
		return d, err
	}
	var out hubstore.DeadLetter
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
UPDATE hub_subs SET cursor = greatest(cursor, $3), attempt = $4, first_fail = $5, last_error = $6, next_at = $7
WHERE key = $1 AND holder = $2 AND lease_until > now()`,
			b(u.Key), node, int64(u.Cursor), u.Attempt, ts(u.FirstFail), b(u.LastError), ts(u.NextAt))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("pgstore: subscription %q: %w", u.Key, hubstore.ErrNotHolder)
		}
		body := d.Body
		if body == nil {
			body = []byte{}
		}
		var r deadRow
		err = tx.QueryRow(ctx, `
INSERT INTO hub_dead (topic, callback, seq, published, content_type, hub_url, links, body, attempts, first_fail, last_error, at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING `+deadCols,
			b(d.Topic), b(d.Callback), int64(d.Seq), ts(d.Published), b(d.ContentType), b(d.HubURL), bl(d.Links), body, d.Attempts,
			ts(d.FirstFail), b(d.LastError), ts(d.At)).Scan(r.dest()...)
		out = r.dead()
		return err
	})
	if err != nil {
		return d, wrap("add dead letter", err)
	}
	return out, nil
}

func (s *Store) DeadLetters(ctx context.Context) iter.Seq2[hubstore.DeadLetter, error] {
	return func(yield func(hubstore.DeadLetter, error) bool) {
		var after int64
		const page = 64 // bodies up to the hub's payload limit
		for {
			if err := s.check(ctx); err != nil {
				yield(hubstore.DeadLetter{}, err)
				return
			}
			rows, _ := s.pool.Query(ctx, `SELECT `+deadCols+` FROM hub_dead WHERE id > $1 ORDER BY id LIMIT $2`, after, page)
			var ds []hubstore.DeadLetter
			var r deadRow
			_, err := pgx.ForEachRow(rows, r.dest(), func() error {
				ds = append(ds, r.dead())
				r = deadRow{}
				return nil
			})
			if err != nil {
				yield(hubstore.DeadLetter{}, wrap("dead letters", err))
				return
			}
			for _, d := range ds {
				if !yield(d, nil) {
					return
				}
			}
			if len(ds) < page {
				return
			}
			after = int64(ds[len(ds)-1].ID)
		}
	}
}

func (s *Store) GetDeadLetter(ctx context.Context, id uint64) (hubstore.DeadLetter, error) {
	if err := s.check(ctx); err != nil {
		return hubstore.DeadLetter{}, err
	}
	var r deadRow
	err := s.pool.QueryRow(ctx, `SELECT `+deadCols+` FROM hub_dead WHERE id = $1`, int64(id)).Scan(r.dest()...)
	if err == pgx.ErrNoRows {
		return hubstore.DeadLetter{}, fmt.Errorf("pgstore: dead letter %d: %w", id, hubstore.ErrNotFound)
	}
	if err != nil {
		return hubstore.DeadLetter{}, wrap("get dead letter", err)
	}
	return r.dead(), nil
}

func (s *Store) DeleteDeadLetter(ctx context.Context, id uint64) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM hub_dead WHERE id = $1`, int64(id))
	if err != nil {
		return wrap("delete dead letter", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("pgstore: dead letter %d: %w", id, hubstore.ErrNotFound)
	}
	return nil
}

// nodeForget is how long a node that stopped renewing stays in hub_nodes
// (not counted as alive) before Claim deletes its row.
const nodeForget = time.Hour

func (s *Store) Claim(ctx context.Context, node string, ttl time.Duration, max int) (hubstore.Claims, error) {
	if node == "" || max < 0 || ttl <= 0 {
		return hubstore.Claims{}, invalid("Claim(%q, ttl %v, max %d)", node, ttl, max)
	}
	if err := s.check(ctx); err != nil {
		return hubstore.Claims{}, err
	}
	var c hubstore.Claims
	err := s.tx(ctx, func(tx pgx.Tx) error {
		us := micros(ttl)
		bt := &pgx.Batch{}
		bt.Queue(`INSERT INTO hub_nodes (node, lease_until) VALUES ($1, now() + $2 * interval '1 microsecond')
ON CONFLICT (node) DO UPDATE SET lease_until = excluded.lease_until`, node, us)
		bt.Queue(`DELETE FROM hub_nodes WHERE lease_until < now() - $1 * interval '1 microsecond'`, micros(nodeForget))
		// Renew what node holds live; what ran out is lost, and taken
		// below like any other (by this node or another).
		bt.Queue(`UPDATE hub_subs SET lease_until = now() + $2 * interval '1 microsecond' WHERE holder = $1 AND lease_until > now()`, node, us)
		if max > 0 {
			bt.Queue(`
UPDATE hub_subs SET holder = $1, lease_until = now() + $2 * interval '1 microsecond'
WHERE key IN (SELECT key FROM hub_subs WHERE lease_until <= now() ORDER BY lease_until LIMIT $3 FOR UPDATE SKIP LOCKED)`, node, us, max)
		}
		bt.Queue(`SELECT `+subCols+` FROM hub_subs WHERE holder = $1 AND lease_until > now() ORDER BY key`, node)
		bt.Queue(`SELECT (SELECT count(*) FROM hub_nodes WHERE lease_until > now()), (SELECT n FROM hub_counts WHERE name = 'subs')`)
		br := tx.SendBatch(ctx, bt)
		defer br.Close()
		n := 3
		if max > 0 {
			n = 4
		}
		for range n {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		rows, err := br.Query()
		if err != nil {
			return err
		}
		if c.Held, err = collectSubs(rows); err != nil {
			return err
		}
		if err := br.QueryRow().Scan(&c.Nodes, &c.Subscriptions); err != nil {
			return err
		}
		return br.Close()
	})
	if err != nil {
		return hubstore.Claims{}, wrap("claim", err)
	}
	return c, nil
}

func (s *Store) Release(ctx context.Context, node string, keys ...string) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		bt := &pgx.Batch{}
		ev := hubstore.EventSubscriptions
		if len(keys) == 0 {
			bt.Queue(`UPDATE hub_subs SET holder = NULL, lease_until = '-infinity' WHERE holder = $1`, node)
			bt.Queue(`UPDATE hub_jobs SET holder = NULL, lease_until = '-infinity' WHERE holder = $1`, node)
			bt.Queue(`DELETE FROM hub_nodes WHERE node = $1`, node)
			ev |= hubstore.EventJobs
		} else {
			bt.Queue(`UPDATE hub_subs SET holder = NULL, lease_until = '-infinity' WHERE holder = $1 AND key = ANY($2)`, node, bl(keys))
		}
		bt.Queue(notifySQL, evPayload(ev))
		return tx.SendBatch(ctx, bt).Close()
	})
	return wrap("release", err)
}

// topicLockClass is the first key of the transaction-level advisory lock
// that serialises the new subscriptions of a topic ("htpc"; the Source's
// store uses other classes); the second is topicLockKey.
const topicLockClass int32 = 0x68747063

func topicLockKey(topic string) int32 {
	h := fnv.New32a()
	h.Write([]byte(topic))
	return int32(h.Sum32())
}
