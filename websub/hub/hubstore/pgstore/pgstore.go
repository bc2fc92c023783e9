package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/resourcesync-go/resourcesync/internal/pgdb"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/internal/shared"
)

// Options tunes Open; nil takes the defaults.
type Options struct {
	// MaxConns bounds the pool (default: the URL's pool_max_conns, else
	// 8). The listening connection comes on top.
	MaxConns int32
}

// Store is the hub's state in PostgreSQL: a pool, and one more
// connection that LISTENs for Watch.
type Store struct {
	pool   *pgxpool.Pool
	lis    *listener
	w      shared.Watchers
	closed atomic.Bool
	jobsMu sync.Mutex // AddJob's bounds are exact within one process
}

var _ hubstore.Store = (*Store)(nil)

// Open connects to the database at url (postgres://... or a key=value
// connection string), brings its schema up to date (schema, pgdb.Open) and
// starts listening for the changes Watch reports.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	pool, cfg, err := pgdb.Open(ctx, url, pgdb.Options{MaxConns: o.MaxConns, DefaultMaxConns: 8}, schema)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	connCfg := cfg.ConnConfig.Copy()
	s := &Store{pool: pool}
	s.lis = startListener(func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, connCfg) }, s.w.Notify)
	return s, nil
}

// Close stops listening, closes the Watch channels and the pool. Claims
// stay until their leases run out.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.lis.close()
	s.w.Close()
	s.pool.Close()
	return nil
}

func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return hubstore.ErrClosed
	}
	return ctx.Err()
}

// maxIndexed bounds the bytes of the strings one btree index row holds:
// PostgreSQL refuses a row over 2704 bytes (headers included) once it
// cannot compress it, so a topic and a subscription key (the topic, a
// separator and the callback) must fit in hub_topics (topic), hub_subs
// (key) and (topic, key), hub_jobs (key, id). fits refuses what would not,
// before anything is stored: a request the hub accepted must never fail
// later, when the verified subscription is stored.
const maxIndexed = 2600

// fits reports, as a hubstore.ErrInvalid, a topic or topic and key too
// long to index (key may be "").
func fits(topic, key string) error {
	if key == "" && len(topic) > maxIndexed {
		return invalid("topic too long for the PostgreSQL store: %d bytes, at most %d", len(topic), maxIndexed)
	}
	if n := len(topic) + len(key); n > maxIndexed {
		return invalid("topic and callback too long for the PostgreSQL store: %d bytes with the subscription key, at most %d", n, maxIndexed)
	}
	return nil
}

func invalid(format string, a ...any) error {
	return fmt.Errorf("pgstore: %w: "+format, append([]any{hubstore.ErrInvalid}, a...)...)
}

func wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, hubstore.ErrNotFound) || errors.Is(err, hubstore.ErrNotHolder) || errors.Is(err, hubstore.ErrTopicFull) ||
		errors.Is(err, hubstore.ErrTooManyJobs) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("pgstore: %s: %w", what, err)
}

// notifySQL is run inside a writing transaction; the event is the
// payload.
const notifySQL = `SELECT pg_notify('` + channel + `', $1)`

func evPayload(ev hubstore.Event) string { return strconv.Itoa(int(ev)) }

// Strings are bytea columns (see the schema): b converts a parameter,
// str scans one.

func b(s string) []byte {
	if s == "" {
		return []byte{} // not nil: nil is NULL
	}
	return []byte(s)
}

func bl(ls []string) [][]byte {
	out := make([][]byte, len(ls))
	for i, l := range ls {
		out[i] = b(l)
	}
	return out
}

func fromBL(ls [][]byte) []string {
	if len(ls) == 0 {
		return nil
	}
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l)
	}
	return out
}

// str scans a bytea column into the string it points to.
type str struct{ p *string }

func (s str) ScanBytes(v []byte) error { *s.p = string(v); return nil }

// Times: timestamptz (microseconds); the zero time is NULL.

func ts(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}

// tsInf is ts with the zero time as -infinity (for columns an index
// orders, where a due-at-once value must sort first).
func tsInf(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{Valid: true, InfinityModifier: pgtype.NegativeInfinity}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}

func fromTS(p pgtype.Timestamptz) time.Time {
	if !p.Valid || p.InfinityModifier != pgtype.Finite {
		return time.Time{}
	}
	return p.Time.UTC()
}

// micros is d as a PostgreSQL interval parameter: `$n * interval '1 microsecond'`.
func micros(d time.Duration) int64 { return d.Microseconds() }

// txOptions: every transaction here is READ COMMITTED; the row locks
// (topic head, FOR UPDATE, SKIP LOCKED) give the guarantees.
var txOptions = pgx.TxOptions{}

func (s *Store) tx(ctx context.Context, f func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, txOptions, f)
}
