package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/resourcesync-go/resourcesync/internal/pgdb"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// Options configure Open. The zero value (or nil) is the default.
type Options struct {
	// MaxConns is the size of the connection pool, which the Stores of a
	// process opened with the same URL and Options share (one Store per
	// set). Default: the URL's pool_max_conns if given, else 8. Each Lead
	// (holding or waiting) uses one more connection of its own, and the
	// Watch channels of a Store one more.
	MaxConns int32
	// KeepAlive is the TCP keepalive idle time (and probe interval) of the
	// connections, on both ends: the client's sockets, and the server's
	// via tcp_keepalives_idle / _interval / _count set on each
	// connection (3 probes). It bounds how long a leader that vanished from
	// the network (power loss, partition: no FIN) keeps the scanner role:
	// about 4 x KeepAlive. Default 5s; negative disables the setting (the
	// system and server defaults apply, typically 2 hours).
	KeepAlive time.Duration
}

// DefaultSet is the set name used when Open is given "".
const DefaultSet = "default"

// Store is a store.Store and store.Shared on PostgreSQL. One Store is one
// set of one database; many Stores (processes) may open the same set.
type Store struct {
	pool    *pgxpool.Pool
	poolKey string // in pools
	set     string
	id      int32  // rs_sets.id
	where   string // host:port/database for messages
	closed  atomic.Bool

	// life ends with Close: it ends Lead waits, the listener and
	// background work.
	life    context.Context
	endLife context.CancelFunc
	done    <-chan struct{} // life.Done()

	// The Watch channels, fed by one listener connection per Store.
	wmu       sync.Mutex
	subs      map[chan struct{}]struct{}
	listening bool
	bg        sync.WaitGroup
	mu        sync.Mutex
	// leads are the releases of the roles held, run by Close.
	leads map[*lead]struct{}

	// Statistics: rows inserted since the last ANALYZE this process ran,
	// the inventory's size then, and whether one is running.
	grown     atomic.Int64
	analyzedN atomic.Int64
	analyzing atomic.Bool

	// epoch is rs_sets.lead_epoch as set by this Store's Lead, 0 when it
	// does not hold the role: Apply refuses to write when the set's epoch
	// moved on (another process took the role).
	epoch atomic.Int64
}

var (
	_ store.Store       = (*Store)(nil)
	_ store.Shared      = (*Store)(nil)
	_ store.PathLimiter = (*Store)(nil)
)

// MaxPath is the longest path, in bytes, a Store holds: the inventory's
// primary key is a B-tree, whose rows PostgreSQL refuses beyond 2704
// bytes, headers included, once it cannot compress them. A fixed bound
// (not whatever compresses) makes the scanner skip the same files
// whatever their names' contents.
const MaxPath = 2600

// MaxPathBytes implements store.PathLimiter: the scanner skips longer
// paths.
func (s *Store) MaxPathBytes() int { return MaxPath }

// Open connects to the database at rawURL (a postgres:// URL or a
// key=value connection string), applies the schema migrations this
// program knows, and returns the Store of the named set, created if new.
// It fails with a wrapped store.ErrCorrupt when the database's schema is
// newer than this program knows, and with an error naming the host (never
// the password) when the URL is invalid or the server cannot be reached.
func Open(ctx context.Context, rawURL, set string, opts *Options) (*Store, error) {
	if opts == nil {
		opts = &Options{}
	}
	if set == "" {
		set = DefaultSet
	}
	cfg, err := pgdb.Config(rawURL, pgdb.Options{MaxConns: opts.MaxConns, KeepAlive: opts.KeepAlive})
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	cc := cfg.ConnConfig
	session := sessionSettings
	if ka := pgdb.KeepAlive(opts.KeepAlive); ka > 0 {
		secs := max(1, int(ka/time.Second))
		session += fmt.Sprintf(", set_config('tcp_keepalives_idle', '%d', false), set_config('tcp_keepalives_interval', '%d', false), set_config('tcp_keepalives_count', '3', false)", secs, secs)
	}
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, session)
		return err
	}
	where := pgdb.Where(cfg)
	key := fmt.Sprint(rawURL, "\x00", opts.MaxConns, "\x00", opts.KeepAlive)
	pool, err := pools.get(key, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %s: %w", where, pgdb.Scrub(err, rawURL))
	}
	life, endLife := context.WithCancel(context.Background())
	s := &Store{pool: pool, poolKey: key, set: set, where: where, life: life, endLife: endLife, done: life.Done(),
		leads: map[*lead]struct{}{}, subs: map[chan struct{}]struct{}{}}
	if err := s.open(ctx); err != nil {
		s.endLife()
		pools.put(key)
		var ce *pgconn.ConnectError
		if errors.As(err, &ce) {
			return nil, fmt.Errorf("pgstore: cannot connect to PostgreSQL at %s (user %s): %w", where, cc.User, pgdb.Scrub(err, rawURL))
		}
		return nil, fmt.Errorf("pgstore: %s: %w", where, pgdb.Scrub(err, rawURL))
	}
	return s, nil
}

func (s *Store) open(ctx context.Context) error {
	if err := migrate(ctx, s.pool); err != nil {
		return err
	}
	// The set's head row: found, or created once. When another process
	// inserts it at the same moment, the INSERT does nothing and the
	// next SELECT finds the other's row.
	for range 5 {
		err := s.pool.QueryRow(ctx, `SELECT id FROM rs_sets WHERE name = $1`, s.set).Scan(&s.id)
		if errors.Is(err, pgx.ErrNoRows) {
			err = s.pool.QueryRow(ctx, `INSERT INTO rs_sets (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id`, s.set).Scan(&s.id)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			continue
		}
		if err != nil {
			return fmt.Errorf("set %q: %w", s.set, err)
		}
		return nil
	}
	return fmt.Errorf("set %q: could not create or find its row", s.set)
}

// Set returns the set's name.
func (s *Store) Set() string { return s.set }

// Pool returns the connection pool, for tools that query the tables
// directly (tests, operators' checks). Writes must go through Apply. The
// pool is shared by the Stores of the process opened with the same URL
// and options; do not close it.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// sessionSettings are set on each connection of the pool. Every query of
// the store is an index lookup or an index range scan in index order, and
// must stay one whatever the planner's statistics say: a table loaded
// faster than autovacuum analyzes it is estimated at a few hundred rows,
// and the planner would then sort or scan the whole table for each page
// or lookup. Disabling the other plan types on these sessions makes the
// index plans win; the settings concern this store's connections only.
const sessionSettings = `SELECT set_config('enable_seqscan', 'off', false), set_config('enable_bitmapscan', 'off', false),
	set_config('enable_sort', 'off', false), set_config('enable_hashjoin', 'off', false), set_config('enable_mergejoin', 'off', false)`

// Close implements store.Store: it releases the scanner role if held, ends
// the Watch channels and closes the pool (waiting for queries in flight).
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.endLife()
	s.mu.Lock()
	leads := make([]*lead, 0, len(s.leads))
	for l := range s.leads {
		leads = append(leads, l)
	}
	s.mu.Unlock()
	for _, l := range leads {
		l.release()
	}
	s.bg.Wait()
	pools.put(s.poolKey)
	return nil
}

// pools are the connection pools of the process, one per URL and
// options, shared by the Stores of its sets (a Source opens one Store per
// set): the connections a process opens do not grow with its sets.
var pools = poolSet{m: map[string]*sharedPool{}}

type poolSet struct {
	mu sync.Mutex
	m  map[string]*sharedPool
}

type sharedPool struct {
	pool *pgxpool.Pool
	refs int
}

func (ps *poolSet) get(key string, cfg *pgxpool.Config) (*pgxpool.Pool, error) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if sp := ps.m[key]; sp != nil {
		sp.refs++
		return sp.pool, nil
	}
	// NewWithConfig does not connect: it only checks the configuration.
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, err
	}
	ps.m[key] = &sharedPool{pool: pool, refs: 1}
	return pool, nil
}

// put releases a reference; the last one closes the pool (waiting for
// the connections in use to be returned).
func (ps *poolSet) put(key string) {
	ps.mu.Lock()
	sp := ps.m[key]
	sp.refs--
	last := sp.refs == 0
	if last {
		delete(ps.m, key)
	}
	ps.mu.Unlock()
	if last {
		sp.pool.Close()
	}
}

// analyzeMin is the number of rows inserted after which Apply has the
// tables analyzed (then again each time they grew by half): the planner
// of a table loaded faster than autovacuum analyzes it (a baseline of a
// million rows in a few seconds) estimates a few hundred rows and picks a
// sort of the whole range for each keyset page, which makes a pass over
// the inventory quadratic.
const analyzeMin = 20000

// grew records n inserted rows and starts an ANALYZE in the background
// when the tables grew enough since the last one.
func (s *Store) grew(n int) {
	if n == 0 {
		return
	}
	g := s.grown.Add(int64(n))
	if g < max(analyzeMin, s.analyzedN.Load()/2) || !s.analyzing.CompareAndSwap(false, true) {
		return
	}
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		s.analyzing.Store(false)
		return
	}
	s.bg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.bg.Done()
		defer s.analyzing.Store(false)
		ctx := s.life
		s.grown.Add(-g)
		// Failures (a role that does not own the tables) leave it to
		// autovacuum.
		if _, err := s.pool.Exec(ctx, `ANALYZE rs_inventory, rs_journal`); err == nil {
			var n int64
			if s.pool.QueryRow(ctx, `SELECT resources FROM rs_sets WHERE id = $1`, s.id).Scan(&n) == nil {
				s.analyzedN.Store(n)
			}
		}
	}()
}

// wrap maps an error of an operation to the store's errors.
func (s *Store) wrap(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	for _, e := range []error{store.ErrLocked, store.ErrConflict, store.ErrTimeOrder, store.ErrNotFound, store.ErrClosed, store.ErrCorrupt, store.ErrNoSpace} {
		if errors.Is(err, e) {
			return err
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("pgstore: %s: %w", op, ctx.Err())
	}
	if s.closed.Load() {
		return fmt.Errorf("pgstore: %s: %w", op, store.ErrClosed)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "53100": // disk_full
			return fmt.Errorf("%w: pgstore %s: %s: %w", store.ErrNoSpace, s.where, op, err)
		case "23505": // unique_violation: a created path that exists
			return fmt.Errorf("%w: pgstore: %s: a created path is in the inventory already: %s", store.ErrConflict, op, pe.Detail)
		case "54000": // program_limit_exceeded: e.g. a path too long for the index
			return fmt.Errorf("pgstore: %s: a value exceeds a PostgreSQL limit (paths are limited to about 2,700 bytes by the B-tree index): %w", op, err)
		}
	}
	return fmt.Errorf("pgstore: %s %s: %w", s.where, op, err)
}

func (s *Store) check(ctx context.Context) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	return ctx.Err()
}

// txRC are the options of write transactions: READ COMMITTED, serialised
// per set by the head row's FOR UPDATE lock.
var txRC = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}
