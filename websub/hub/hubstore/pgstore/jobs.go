package pgstore

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

const jobCols = `id, key, host, mode, topic, callback, secret, lease, verify_token, has_token, attempts, next_at`

type jobRow struct {
	j      hubstore.Job
	id     int64
	nextAt pgtype.Timestamptz
}

func (r *jobRow) dest() []any {
	return []any{&r.id, str{&r.j.Key}, str{&r.j.Host}, &r.j.Mode, str{&r.j.Topic}, str{&r.j.Callback}, str{&r.j.Secret}, &r.j.Lease,
		str{&r.j.VerifyToken}, &r.j.HasToken, &r.j.Attempts, &r.nextAt}
}

func (r *jobRow) job() hubstore.Job {
	j := r.j
	j.ID, j.NextAt = uint64(r.id), fromTS(r.nextAt)
	return j
}

func collectJobs(rows pgx.Rows) ([]hubstore.Job, error) {
	var out []hubstore.Job
	var r jobRow
	_, err := pgx.ForEachRow(rows, r.dest(), func() error {
		out = append(out, r.job())
		return nil
	})
	return out, err
}

// AddJob checks the bounds with counts limited to the bound (range scans
// of at most maxTotal and maxPerHost index entries), under a process-wide
// mutex so that they are exact within one process.
func (s *Store) AddJob(ctx context.Context, j hubstore.Job, maxTotal, maxPerHost int) (hubstore.Job, error) {
	if j.Key == "" {
		return j, invalid("job without key")
	}
	if err := fits(j.Topic, j.Key); err != nil {
		return j, err
	}
	if err := s.check(ctx); err != nil {
		return j, err
	}
	s.jobsMu.Lock()
	defer s.jobsMu.Unlock()
	var out hubstore.Job
	err := s.tx(ctx, func(tx pgx.Tx) error {
		if maxTotal > 0 {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM hub_jobs LIMIT $1) x`, maxTotal).Scan(&n); err != nil {
				return err
			}
			if n >= maxTotal {
				return fmt.Errorf("pgstore: %w", hubstore.ErrTooManyJobs)
			}
		}
		if maxPerHost > 0 {
			var n int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM hub_jobs WHERE host = $1 LIMIT $2) x`, b(j.Host), maxPerHost).Scan(&n); err != nil {
				return err
			}
			if n >= maxPerHost {
				return fmt.Errorf("pgstore: %w", hubstore.ErrTooManyJobs)
			}
		}
		var r jobRow
		err := tx.QueryRow(ctx, `
INSERT INTO hub_jobs (key, host, mode, topic, callback, secret, lease, verify_token, has_token, attempts, next_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING `+jobCols,
			b(j.Key), b(j.Host), j.Mode, b(j.Topic), b(j.Callback), b(j.Secret), j.Lease, b(j.VerifyToken), j.HasToken, j.Attempts, tsInf(j.NextAt)).Scan(r.dest()...)
		if err != nil {
			return err
		}
		out = r.job()
		_, err = tx.Exec(ctx, notifySQL, evPayload(hubstore.EventJobs))
		return err
	})
	if err != nil {
		return j, wrap("add job", err)
	}
	return out, nil
}

func (s *Store) UpdateJob(ctx context.Context, j hubstore.Job) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	err := s.tx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
UPDATE hub_jobs SET key = $2, host = $3, mode = $4, topic = $5, callback = $6, secret = $7, lease = $8,
	verify_token = $9, has_token = $10, attempts = $11, next_at = $12, holder = NULL, lease_until = '-infinity'
WHERE id = $1`, int64(j.ID), b(j.Key), b(j.Host), j.Mode, b(j.Topic), b(j.Callback), b(j.Secret), j.Lease, b(j.VerifyToken), j.HasToken,
			j.Attempts, tsInf(j.NextAt))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("pgstore: job %d: %w", j.ID, hubstore.ErrNotFound)
		}
		_, err = tx.Exec(ctx, notifySQL, evPayload(hubstore.EventJobs))
		return err
	})
	return wrap("update job", err)
}

func (s *Store) DeleteJob(ctx context.Context, id uint64) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM hub_jobs WHERE id = $1`, int64(id))
	return wrap("delete job", err)
}

func (s *Store) Jobs(ctx context.Context) iter.Seq2[hubstore.Job, error] {
	return func(yield func(hubstore.Job, error) bool) {
		var after int64
		for {
			if err := s.check(ctx); err != nil {
				yield(hubstore.Job{}, err)
				return
			}
			rows, _ := s.pool.Query(ctx, `SELECT `+jobCols+` FROM hub_jobs WHERE id > $1 ORDER BY id LIMIT $2`, after, subPage)
			page, err := collectJobs(rows)
			if err != nil {
				yield(hubstore.Job{}, wrap("jobs", err))
				return
			}
			for _, j := range page {
				if !yield(j, nil) {
					return
				}
			}
			if len(page) < subPage {
				return
			}
			after = int64(page[len(page)-1].ID)
		}
	}
}

// firstOfKey and free are the conditions of a job ClaimJobs may take: the
// lowest ID of its key (one probe of (key, id)) and not held live by
// another node.
const (
	firstOfKey = `NOT EXISTS (SELECT 1 FROM hub_jobs o WHERE o.key = j.key AND o.id < j.id)`
	jobFree    = `(j.holder = $1 OR j.lease_until <= now())`
)

// ClaimJobs reads the due jobs by the next_at index, locks them with SKIP
// LOCKED (another node's concurrent claim is skipped, not waited for) and
// marks them held; next comes from the same index, in order, first match.
func (s *Store) ClaimJobs(ctx context.Context, node string, now time.Time, ttl time.Duration, max int) ([]hubstore.Job, time.Time, error) {
	if node == "" || max < 1 {
		return nil, time.Time{}, invalid("ClaimJobs(%q, max %d)", node, max)
	}
	if err := s.check(ctx); err != nil {
		return nil, time.Time{}, err
	}
	var due []hubstore.Job
	var next time.Time
	err := s.tx(ctx, func(tx pgx.Tx) error {
		due, next = nil, time.Time{}
		rows, _ := tx.Query(ctx, `
UPDATE hub_jobs SET holder = $1, lease_until = now() + $2 * interval '1 microsecond'
WHERE id IN (
	SELECT j.id FROM hub_jobs j
	WHERE j.next_at <= $3 AND `+jobFree+` AND `+firstOfKey+`
	ORDER BY j.id LIMIT $4 FOR UPDATE SKIP LOCKED)
RETURNING `+jobCols, node, micros(ttl), ts(now), max)
		var err error
		if due, err = collectJobs(rows); err != nil {
			return err
		}
		ids := make([]int64, len(due))
		for i, j := range due {
			ids[i] = int64(j.ID)
		}
		var n pgtype.Timestamptz
		err = tx.QueryRow(ctx, `
SELECT j.next_at FROM hub_jobs j
WHERE `+jobFree+` AND `+firstOfKey+` AND j.id <> ALL($2)
ORDER BY j.next_at LIMIT 1`, node, ids).Scan(&n)
		switch {
		case err == pgx.ErrNoRows:
		case err != nil:
			return err
		case n.Valid && n.InfinityModifier == pgtype.NegativeInfinity:
			next = time.Unix(0, 0).UTC() // due at once: any time before now
		default:
			next = fromTS(n)
		}
		return nil
	})
	if err != nil {
		return nil, time.Time{}, wrap("claim jobs", err)
	}
	sortJobs(due)
	return due, next, nil
}

func sortJobs(js []hubstore.Job) {
	for i := 1; i < len(js); i++ {
		for k := i; k > 0 && js[k].ID < js[k-1].ID; k-- {
			js[k], js[k-1] = js[k-1], js[k]
		}
	}
}

func (s *Store) Watch(ctx context.Context) (<-chan hubstore.Event, error) {
	if s.closed.Load() {
		return nil, hubstore.ErrClosed
	}
	c, err := s.w.Add(ctx)
	if err != nil {
		return nil, err
	}
	<-s.lis.ready // changes committed after Watch returns are seen
	return c, nil
}
