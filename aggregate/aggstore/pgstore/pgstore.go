package pgstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/internal/pgdb"
)

// Options tunes Open; nil takes the defaults.
type Options struct {
	// MaxConns bounds the pool (default: the URL's pool_max_conns, else
	// 4).
	MaxConns int32
}

// Store is the aggregator's state in PostgreSQL.
type Store struct {
	pool *pgxpool.Pool
	// instance tells this handle's heartbeats from another's under the
	// same node name (another process, or this one's predecessor).
	instance string
	closed   atomic.Bool
}

var _ aggstore.Store = (*Store)(nil)

// Open connects to the database at url (postgres://... or a key=value
// connection string) and brings its schema up to date.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	pool, _, err := pgdb.Open(ctx, url, pgdb.Options{MaxConns: o.MaxConns, DefaultMaxConns: 4}, schema)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	return &Store{pool: pool, instance: rand.Text()}, nil
}

// Close closes the pool; leases stay until they expire.
func (s *Store) Close() error {
	if !s.closed.Swap(true) {
		s.pool.Close()
	}
	return nil
}

func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return fmt.Errorf("pgstore: %w", aggstore.ErrClosed)
	}
	return ctx.Err()
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("pgstore: %w: "+format, append([]any{aggstore.ErrInvalid}, a...)...)
}

func wrap(what string, err error) error {
	switch {
	case err == nil, errors.Is(err, aggstore.ErrNotHolder), errors.Is(err, aggstore.ErrNotRunning), errors.Is(err, aggstore.ErrInvalid),
		errors.Is(err, aggstore.ErrFenced), errors.Is(err, aggstore.ErrNodeInUse),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("pgstore: %s: %w", what, err)
}

// tx runs fn in a transaction.
func (s *Store) tx(ctx context.Context, what string, fn func(pgx.Tx) error) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	return wrap(what, pgx.BeginFunc(ctx, s.pool, fn))
}

// micros is d in microseconds, the unit of the SQL intervals.
func micros(d time.Duration) int64 { return d.Microseconds() }

// clean makes s storable in a text column: valid UTF-8 without NUL.
func clean(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// Times: timestamptz (microseconds); the zero time is NULL.

func ts(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}

func fromTS(p pgtype.Timestamptz) time.Time {
	if !p.Valid || p.InfinityModifier != pgtype.Finite {
		return time.Time{}
	}
	return p.Time.UTC()
}

// Heartbeat implements aggstore.Store. The node's row names the handle
// that heartbeats; the upsert overwrites it only for the same handle or
// an expired row, so of two processes starting at once under one name
// the second is refused.
func (s *Store) Heartbeat(ctx context.Context, node string, ttl time.Duration) ([]string, error) {
	if node == "" || ttl <= 0 {
		return nil, invalid("heartbeat of node %q for %v", node, ttl)
	}
	var alive []string
	err := s.tx(ctx, "heartbeat", func(tx pgx.Tx) error {
		var prev string
		err := tx.QueryRow(ctx, `SELECT instance FROM aggregate_nodes WHERE node = $1 FOR UPDATE`, node).Scan(&prev)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO aggregate_nodes AS n (node, expires, instance) VALUES ($1, now() + $2 * interval '1 microsecond', $3)
ON CONFLICT (node) DO UPDATE SET expires = EXCLUDED.expires, instance = EXCLUDED.instance
WHERE n.instance = EXCLUDED.instance OR n.expires <= now()`, node, micros(ttl), s.instance)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("pgstore: node %q: %w", node, aggstore.ErrNodeInUse)
		}
		if prev != s.instance {
			// This handle takes the name over (a restart): the leases
			// its predecessor held end here, so that a predecessor that
			// was only paused is fenced, not renewed under its epochs.
			if _, err := tx.Exec(ctx, `UPDATE aggregate_leases SET expires = now() WHERE node = $1 AND expires > now()`, node); err != nil {
				return err
			}
		}
		// An expired node is gone; its row is kept a day for whoever
		// looks at the table.
		if _, err := tx.Exec(ctx, `DELETE FROM aggregate_nodes WHERE expires < now() - interval '1 day'`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT node FROM aggregate_nodes WHERE expires > now() ORDER BY node COLLATE "C"`)
		if err != nil {
			return err
		}
		alive, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, err
	}
	return alive, nil
}

// Claim implements aggstore.Store. The new epoch is drawn on every call
// (a renewal keeps the old one and wastes the draw): the sequence has
// 2^63 of them. A live lease is this handle's to renew only if this
// handle took it: a process that shares the node's name (a paused
// predecessor that came back) neither renews nor steals it.
func (s *Store) Claim(ctx context.Context, node, source string, ttl time.Duration) (bool, error) {
	if node == "" || source == "" || ttl <= 0 {
		return false, invalid("claim of %q by node %q for %v", source, node, ttl)
	}
	held := false
	err := s.tx(ctx, "claim", func(tx pgx.Tx) error {
		// The ON CONFLICT arm locks the row and evaluates WHERE on its
		// newest version: of two concurrent claims, the second sees the
		// first's live lease.
		var epoch int64
		err := tx.QueryRow(ctx, `
INSERT INTO aggregate_leases AS l (source, node, expires, epoch, instance)
VALUES ($1, $2, now() + $3 * interval '1 microsecond', nextval('aggregate_lease_epochs'), $4)
ON CONFLICT (source) DO UPDATE SET node = EXCLUDED.node, expires = EXCLUDED.expires, instance = EXCLUDED.instance,
	epoch = CASE WHEN l.node = EXCLUDED.node AND l.instance = EXCLUDED.instance AND l.expires > now() THEN l.epoch ELSE EXCLUDED.epoch END
WHERE l.node = EXCLUDED.node AND l.instance = EXCLUDED.instance OR l.expires <= now()
RETURNING epoch`, source, node, micros(ttl), s.instance).Scan(&epoch)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		held = true
		// Under this tenure no run of an earlier one goes on, whoever
		// ran it. A StartRun that holds the old lease row FOR SHARE
		// committed before the lock above was granted, so this sees
		// its run. (On a renewal this finds nothing, by the partial
		// index.)
		_, err = tx.Exec(ctx, `UPDATE aggregate_runs SET state = $3, end_at = now()
WHERE source = $1 AND epoch <> $2 AND state = $4`, source, epoch, aggstore.StateInterrupted, aggstore.StateRunning)
		return err
	})
	return held, err
}
