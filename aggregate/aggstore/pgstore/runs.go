package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
)

// Release implements aggstore.Store.
func (s *Store) Release(ctx context.Context, node string, sources ...string) error {
	return s.tx(ctx, "release", func(tx pgx.Tx) error {
		var err error
		if len(sources) == 0 {
			_, err = tx.Exec(ctx, `DELETE FROM aggregate_leases WHERE node = $1`, node)
		} else {
			_, err = tx.Exec(ctx, `DELETE FROM aggregate_leases WHERE node = $1 AND source = ANY($2)`, node, sources)
		}
		return err
	})
}

// Leases implements aggstore.Store.
func (s *Store) Leases(ctx context.Context) ([]aggstore.Lease, error) {
	var out []aggstore.Lease
	err := s.tx(ctx, "leases", func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT source, node, expires, epoch FROM aggregate_leases WHERE expires > now() ORDER BY source COLLATE "C"`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (aggstore.Lease, error) {
			var l aggstore.Lease
			var exp pgtype.Timestamptz
			err := row.Scan(&l.Source, &l.Node, &exp, &l.Epoch)
			l.Expires = fromTS(exp)
			return l, err
		})
		return err
	})
	return out, err
}

// StartRun implements aggstore.Store.
func (s *Store) StartRun(ctx context.Context, r aggstore.Run) (int64, error) {
	if r.Node == "" || r.Source == "" {
		return 0, invalid("run of %q by node %q", r.Source, r.Node)
	}
	var id int64
	err := s.tx(ctx, "start run", func(tx pgx.Tx) error {
		// FOR SHARE holds the lease row until the run is committed, so a
		// concurrent takeover waits and then interrupts the run, or takes
		// the lease first and the row no longer matches.
		err := tx.QueryRow(ctx, `
INSERT INTO aggregate_runs (source, node, mode, start_at, state, fetched, deleted, failed, bytes, lag_ns, error, reason, epoch)
SELECT $1, $2, $3, coalesce($4, now()), $5, $6, $7, $8, $9, $10, $11, $12, held.epoch
FROM (SELECT epoch FROM aggregate_leases WHERE source = $1 AND node = $2 AND instance = $13 AND expires > now() FOR SHARE) AS held
RETURNING id`,
			r.Source, r.Node, clean(r.Mode), ts(r.Start), aggstore.StateRunning,
			r.Fetched, r.Deleted, r.Failed, r.Bytes, int64(r.Lag), clean(r.Error), clean(r.Reason), s.instance).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("pgstore: run of %q by %q: %w", r.Source, r.Node, aggstore.ErrNotHolder)
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// Fence implements aggstore.Store: one primary-key lookup of the run
// and of its Source's lease, outside a transaction.
func (s *Store) Fence(ctx context.Context, run int64) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	var one int
	err := s.pool.QueryRow(ctx, `
SELECT 1 FROM aggregate_runs r JOIN aggregate_leases l ON l.source = r.source
WHERE r.id = $1 AND r.state = $2 AND l.node = r.node AND l.epoch = r.epoch AND l.expires > now()`,
		run, aggstore.StateRunning).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("pgstore: run %d: %w", run, aggstore.ErrFenced)
	}
	return wrap("fence", err)
}

// FinishRun implements aggstore.Store. The run's Source, Node, Mode and
// Start stay as StartRun recorded them; next.Source may be left empty
// (the run's), and next.LastRun 0 (r.ID). The UPDATE is conditional on
// the run's epoch being its Source's lease epoch.
func (s *Store) FinishRun(ctx context.Context, r aggstore.Run, next aggstore.Schedule) error {
	if r.State != aggstore.StateOK && r.State != aggstore.StateFailed {
		return invalid("run %d finished with state %q", r.ID, r.State)
	}
	if next.LastRun == 0 {
		next.LastRun = r.ID
	}
	return s.tx(ctx, "finish run", func(tx pgx.Tx) error {
		var source string
		err := tx.QueryRow(ctx, `
UPDATE aggregate_runs SET end_at = coalesce($2, now()), state = $3, fetched = $4, deleted = $5, failed = $6, bytes = $7,
	lag_ns = $8, error = $9, reason = $10
WHERE id = $1 AND state = $11 AND epoch = (SELECT l.epoch FROM aggregate_leases l
	WHERE l.source = aggregate_runs.source AND l.node = aggregate_runs.node)
RETURNING source`,
			r.ID, ts(r.End), r.State, r.Fetched, r.Deleted, r.Failed, r.Bytes, int64(r.Lag), clean(r.Error), clean(r.Reason),
			aggstore.StateRunning).Scan(&source)
		if errors.Is(err, pgx.ErrNoRows) {
			var running bool
			if err := tx.QueryRow(ctx, `SELECT state = $2 FROM aggregate_runs WHERE id = $1`, r.ID, aggstore.StateRunning).Scan(&running); err == nil && running {
				return fmt.Errorf("pgstore: run %d: %w", r.ID, aggstore.ErrFenced)
			}
			return fmt.Errorf("pgstore: run %d: %w", r.ID, aggstore.ErrNotRunning)
		}
		if err != nil {
			return err
		}
		if next.Source == "" {
			next.Source = source
		}
		if next.Source != source {
			// The transaction rolls back: the run stays running.
			return invalid("run %d of %q finished with the schedule of %q", r.ID, source, next.Source)
		}
		return putSchedule(ctx, tx, next)
	})
}

// InterruptRuns implements aggstore.Store.
func (s *Store) InterruptRuns(ctx context.Context, node string, now time.Time) (int, error) {
	n := 0
	err := s.tx(ctx, "interrupt runs", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE aggregate_runs SET state = $2, end_at = coalesce($3, now()) WHERE node = $1 AND state = $4`,
			node, aggstore.StateInterrupted, ts(now), aggstore.StateRunning)
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}

// Runs implements aggstore.Store.
func (s *Store) Runs(ctx context.Context, source string, limit int) ([]aggstore.Run, error) {
	var out []aggstore.Run
	err := s.tx(ctx, "runs", func(tx pgx.Tx) error {
		var lim *int
		if limit > 0 {
			lim = &limit
		}
		rows, err := tx.Query(ctx, `
SELECT id, source, node, mode, start_at, end_at, state, fetched, deleted, failed, bytes, lag_ns, error, reason, epoch
FROM aggregate_runs WHERE source = $1 ORDER BY id DESC LIMIT $2`, source, lim)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (aggstore.Run, error) {
			var r aggstore.Run
			var start, end pgtype.Timestamptz
			var lag int64
			err := row.Scan(&r.ID, &r.Source, &r.Node, &r.Mode, &start, &end, &r.State, &r.Fetched, &r.Deleted, &r.Failed,
				&r.Bytes, &lag, &r.Error, &r.Reason, &r.Epoch)
			r.Start, r.End, r.Lag = fromTS(start), fromTS(end), time.Duration(lag)
			return r, err
		})
		return err
	})
	return out, err
}

func putSchedule(ctx context.Context, tx pgx.Tx, sc aggstore.Schedule) error {
	_, err := tx.Exec(ctx, `
INSERT INTO aggregate_schedules (source, next_at, failures, last_success, last_run) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (source) DO UPDATE SET next_at = EXCLUDED.next_at, failures = EXCLUDED.failures,
	last_success = EXCLUDED.last_success, last_run = EXCLUDED.last_run`,
		sc.Source, ts(sc.Next), sc.Failures, ts(sc.LastSuccess), sc.LastRun)
	return err
}

// PutSchedule implements aggstore.Store.
func (s *Store) PutSchedule(ctx context.Context, sc aggstore.Schedule) error {
	if sc.Source == "" {
		return invalid("schedule without a source")
	}
	return s.tx(ctx, "put schedule", func(tx pgx.Tx) error { return putSchedule(ctx, tx, sc) })
}

// Schedules implements aggstore.Store.
func (s *Store) Schedules(ctx context.Context) ([]aggstore.Schedule, error) {
	var out []aggstore.Schedule
	err := s.tx(ctx, "schedules", func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT source, next_at, failures, last_success, last_run FROM aggregate_schedules ORDER BY source COLLATE "C"`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (aggstore.Schedule, error) {
			var sc aggstore.Schedule
			var next, last pgtype.Timestamptz
			err := row.Scan(&sc.Source, &next, &sc.Failures, &last, &sc.LastRun)
			sc.Next, sc.LastSuccess = fromTS(next), fromTS(last)
			return sc, err
		})
		return err
	})
	return out, err
}

// Forget implements aggstore.Store.
func (s *Store) Forget(ctx context.Context, source string) error {
	return s.tx(ctx, "forget", func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `DELETE FROM aggregate_schedules WHERE source = $1`, source); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM aggregate_leases WHERE source = $1`, source)
		return err
	})
}

// PruneRuns implements aggstore.Store.
func (s *Store) PruneRuns(ctx context.Context, source string, keep int) (int, error) {
	var n int64
	err := s.tx(ctx, "prune runs", func(tx pgx.Tx) error {
		if keep <= 0 {
			tag, err := tx.Exec(ctx, `DELETE FROM aggregate_runs WHERE source = $1 AND state <> $2`, source, aggstore.StateRunning)
			n = tag.RowsAffected()
			return err
		}
		tag, err := tx.Exec(ctx, `
DELETE FROM aggregate_runs WHERE source = $1 AND state <> $3 AND id < coalesce(
	(SELECT id FROM aggregate_runs WHERE source = $1 ORDER BY id DESC OFFSET $2 - 1 LIMIT 1), 0)`,
			source, keep, aggstore.StateRunning)
		n = tag.RowsAffected()
		return err
	})
	return int(n), err
}
