package pgstore

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options tunes Open; nil takes the defaults.
type Options struct {
	// MaxConns bounds the pool (default 16). The listening connection
	// comes on top.
	MaxConns int32
}

// Store is the hub's state in PostgreSQL.
type Store struct {
	pool *pgxpool.Pool
	lis  *listener
}

// DefaultNode is the node name used when none is given: host name and
// process ID, unique among the processes of a cluster.
func DefaultNode() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "node"
	}
	return h + "-" + strconv.Itoa(os.Getpid())
}

// Open connects to the database at url (a postgres:// URL or key=value
// connection string), brings its schema up to date and starts listening
// for other nodes' commits.
func Open(ctx context.Context, url string, opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 16
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	cfg.MaxConns = o.MaxConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgstore: %w", err)
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	connCfg := cfg.ConnConfig.Copy()
	s := &Store{pool: pool}
	s.lis = startListener(func(ctx context.Context) (*pgx.Conn, error) { return pgx.ConnectConfig(ctx, connCfg) })
	return s, nil
}

// Close stops listening and closes the pool.
func (s *Store) Close() error {
	s.lis.close()
	s.pool.Close()
	return nil
}
