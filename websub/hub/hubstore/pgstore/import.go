package pgstore

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/jackc/pgx/v5"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// ErrNotEmpty is returned by Import when the database already holds a
// hub's state.
var ErrNotEmpty = errors.New("pgstore: the database already holds hub state")

// ImportStats counts what Import copied.
type ImportStats struct {
	Topics, Entries, Subscriptions, Jobs, DeadLetters int
	// TooLong counts the topics (with their logs), subscriptions and
	// jobs left out: their topic or key is longer than PostgreSQL can
	// index (see fits); the embedded store took them. The rest is
	// imported all the same.
	TooLong int
}

// Import copies the whole state of src (for example the embedded store of
// a hub that moves to PostgreSQL) into s, which must hold no hub state
// yet, in one transaction and with COPY: topic heads, log entries,
// subscriptions with their cursors, verification jobs and dead letters
// (IDs kept). Claims are not copied. Nothing may write to src meanwhile.
func (s *Store) Import(ctx context.Context, src hubstore.Store) (ImportStats, error) {
	var st ImportStats
	if err := s.check(ctx); err != nil {
		return st, err
	}
	heads, err := src.Heads(ctx)
	if err != nil {
		return st, fmt.Errorf("pgstore: import: %w", err)
	}
	err = s.tx(ctx, func(tx pgx.Tx) error {
		st = ImportStats{}
		// Nobody else imports or writes meanwhile (a hub that starts
		// waits for the lock at its first write to these tables).
		if _, err := tx.Exec(ctx, `LOCK TABLE hub_topics, hub_subs, hub_jobs, hub_dead IN EXCLUSIVE MODE`); err != nil {
			return err
		}
		var used bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM hub_topics) OR EXISTS (SELECT 1 FROM hub_subs)
	OR EXISTS (SELECT 1 FROM hub_jobs) OR EXISTS (SELECT 1 FROM hub_dead)`).Scan(&used); err != nil {
			return err
		}
		if used {
			return ErrNotEmpty
		}
		topics := make([][]any, 0, len(heads))
		for t, h := range heads {
			if fits(t, "") != nil {
				st.TooLong++
				continue
			}
			topics = append(topics, []any{b(t), int64(h)})
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"hub_topics"}, []string{"topic", "head"}, pgx.CopyFromRows(topics)); err != nil {
			return err
		}
		st.Topics = len(topics)
		for t := range heads {
			if fits(t, "") != nil {
				continue
			}
			var id int64
			if err := tx.QueryRow(ctx, `SELECT id FROM hub_topics WHERE topic = $1`, b(t)).Scan(&id); err != nil {
				return err
			}
			n, err := copyEntries(ctx, tx, src, t, id)
			st.Entries += n
			if err != nil {
				return err
			}
		}
		n, err := copySeq(ctx, tx, "hub_subs", []string{"key", "topic", "callback", "secret", "lease", "expires", "cursor",
			"attempt", "first_fail", "last_error", "next_at"}, src.Subscriptions(ctx, ""), func(r hubstore.Subscription) []any {
			if fits(r.Topic, r.Key) != nil {
				st.TooLong++
				return nil
			}
			return []any{b(r.Key), b(r.Topic), b(r.Callback), b(r.Secret), r.Lease, ts(r.Expires), int64(r.Cursor),
				int32(r.Attempt), ts(r.FirstFail), b(r.LastError), ts(r.NextAt)}
		})
		st.Subscriptions = n
		if err != nil {
			return err
		}
		n, err = copySeq(ctx, tx, "hub_jobs", []string{"id", "key", "host", "mode", "topic", "callback", "secret", "lease",
			"verify_token", "has_token", "attempts", "next_at"}, src.Jobs(ctx), func(j hubstore.Job) []any {
			if fits(j.Topic, j.Key) != nil {
				st.TooLong++
				return nil
			}
			return []any{int64(j.ID), b(j.Key), b(j.Host), j.Mode, b(j.Topic), b(j.Callback), b(j.Secret), j.Lease,
				b(j.VerifyToken), j.HasToken, int32(j.Attempts), tsInf(j.NextAt)}
		})
		st.Jobs = n
		if err != nil {
			return err
		}
		n, err = copySeq(ctx, tx, "hub_dead", []string{"id", "topic", "callback", "seq", "published", "content_type", "hub_url",
			"links", "body", "attempts", "first_fail", "last_error", "at"}, src.DeadLetters(ctx), func(d hubstore.DeadLetter) []any {
			body := d.Body
			if body == nil {
				body = []byte{}
			}
			return []any{int64(d.ID), b(d.Topic), b(d.Callback), int64(d.Seq), ts(d.Published), b(d.ContentType), b(d.HubURL),
				bl(d.Links), body, int32(d.Attempts), ts(d.FirstFail), b(d.LastError), ts(d.At)}
		})
		st.DeadLetters = n
		if err != nil {
			return err
		}
		// The copied IDs were given explicitly: new ones continue after them.
		for _, t := range []string{"hub_jobs", "hub_dead"} {
			if _, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence('`+t+`', 'id'), coalesce((SELECT max(id) FROM `+t+`), 0) + 1, false)`); err != nil {
				return err
			}
		}
		_, err = tx.Exec(ctx, notifySQL, evPayload(allEvents))
		return err
	})
	if err != nil {
		if errors.Is(err, ErrNotEmpty) {
			return st, err
		}
		return st, fmt.Errorf("pgstore: import: %w", err)
	}
	return st, nil
}

// copyEntries copies topic's log, page by page, with one COPY.
func copyEntries(ctx context.Context, tx pgx.Tx, src hubstore.Store, topic string, id int64) (int, error) {
	var (
		page  []hubstore.Entry
		i     int
		after uint64
		err   error
		n     int
	)
	rows := pgx.CopyFromFunc(func() ([]any, error) {
		if i == len(page) {
			if page, err = src.Entries(ctx, topic, after, maxPage); err != nil {
				return nil, err
			}
			if len(page) == 0 {
				return nil, nil
			}
			i, after = 0, page[len(page)-1].Seq
		}
		e := page[i]
		i++
		n++
		body := e.Body
		if body == nil {
			body = []byte{}
		}
		return []any{id, int64(e.Seq), ts(e.Published), b(e.ContentType), b(e.HubURL), bl(e.Links), body}, nil
	})
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"hub_entries"}, []string{"topic_id", "seq", "published", "content_type", "hub_url", "links", "body"}, rows)
	return n, err
}

// copySeq copies the records of an iterator with one COPY; a record whose
// row is nil is left out.
func copySeq[T any](ctx context.Context, tx pgx.Tx, table string, cols []string, seq iter.Seq2[T, error], row func(T) []any) (int, error) {
	next, stop := iter.Pull2(seq)
	defer stop()
	n := 0
	_, err := tx.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromFunc(func() ([]any, error) {
		for {
			v, err, ok := next()
			if !ok {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			if r := row(v); r != nil {
				n++
				return r, nil
			}
		}
	}))
	return n, err
}
