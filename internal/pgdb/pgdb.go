package pgdb

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Options configure Config. The zero value takes the defaults.
type Options struct {
	// MaxConns is the size of the pool. Zero takes the URL's
	// pool_max_conns when it gives one, else DefaultMaxConns.
	MaxConns int32
	// DefaultMaxConns is the size when neither MaxConns nor the URL says
	// (8 if zero).
	DefaultMaxConns int32
	// KeepAlive is the TCP keepalive idle time and probe interval of the
	// client's sockets (3 probes): a connection whose flow a middlebox
	// dropped, or whose server vanished, fails in about 4 x KeepAlive
	// instead of pgx's default of 5 min x 9 probes, during which a query
	// with no deadline would wait. Zero is DefaultKeepAlive; negative
	// leaves the system's setting.
	KeepAlive time.Duration
}

// DefaultKeepAlive is Options.KeepAlive's default.
const DefaultKeepAlive = 5 * time.Second

// Config parses rawURL (a postgres:// or postgresql:// URL, or a
// key=value connection string) into a pool configuration with the
// settings every store uses: the pool size, the keepalive dialer,
// connections closed after 5 minutes idle and checked every 30 s, and
// application_name=resourcesync unless the URL names one. An error names
// the host, never the password.
func Config(rawURL string, o Options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("invalid PostgreSQL URL (host %s): %w", Host(rawURL), parseError(err, rawURL))
	}
	switch {
	case o.MaxConns > 0:
		cfg.MaxConns = o.MaxConns
	case strings.Contains(rawURL, "pool_max_conns"):
	case o.DefaultMaxConns > 0:
		cfg.MaxConns = o.DefaultMaxConns
	default:
		cfg.MaxConns = 8
	}
	cfg.MinConns = 0
	cfg.MaxConnIdleTime = 5 * time.Minute
	cfg.HealthCheckPeriod = 30 * time.Second
	cc := cfg.ConnConfig
	if ka := KeepAlive(o.KeepAlive); ka > 0 {
		d := &net.Dialer{KeepAliveConfig: net.KeepAliveConfig{Enable: true, Idle: ka, Interval: ka, Count: 3}}
		if cc.ConnectTimeout > 0 {
			d.Timeout = cc.ConnectTimeout
		}
		cc.DialFunc = d.DialContext
	}
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = "resourcesync"
	}
	return cfg, nil
}

// KeepAlive is the keepalive Options.KeepAlive d stands for: d, or
// DefaultKeepAlive for zero; negative is off.
func KeepAlive(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultKeepAlive
	}
	return d
}

// Where names cfg's database for messages: host:port/database.
func Where(cfg *pgxpool.Config) string {
	cc := cfg.ConnConfig
	return fmt.Sprintf("%s:%d/%s", cc.Host, cc.Port, cc.Database)
}

// Host names the host of a URL or connection string for messages, also
// when it does not parse.
func Host(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	if rest, ok := strings.CutPrefix(raw, "postgres://"); ok || strings.HasPrefix(raw, "postgresql://") {
		if !ok {
			rest = strings.TrimPrefix(raw, "postgresql://")
		}
		rest, _, _ = strings.Cut(rest, "/")
		rest, _, _ = strings.Cut(rest, "?")
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			rest = rest[i+1:]
		}
		return rest
	}
	for _, f := range strings.Fields(raw) {
		if h, ok := strings.CutPrefix(f, "host="); ok {
			return h
		}
	}
	return "(unknown)"
}

// parseError is the error of an unparsable URL without the URL: pgx
// quotes it with the password redacted, on a best-effort basis only.
func parseError(err error, raw string) error {
	msg := err.Error()
	if i := strings.LastIndex(msg, "`: "); strings.HasPrefix(msg, "cannot parse `") && i >= 0 {
		msg = msg[i+3:]
	}
	return Scrub(&scrubbed{msg, err}, raw)
}

// scrubbed is an error whose message has the password removed; errors.Is
// and As still see the original.
type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// Scrub removes the password of raw (its userinfo's, or a key=value
// string's password=) from err's message; errors.Is and As still see
// err. pgx redacts it too, on a best-effort basis only.
func Scrub(err error, raw string) error {
	if err == nil {
		return nil
	}
	var pw string
	if u, e := url.Parse(raw); e == nil && u.User != nil {
		pw, _ = u.User.Password()
	}
	for _, f := range strings.Fields(raw) {
		if p, ok := strings.CutPrefix(f, "password="); ok {
			pw = strings.Trim(p, "'")
		}
	}
	msg := err.Error()
	if pw == "" || !strings.Contains(msg, pw) {
		return err
	}
	return &scrubbed{strings.ReplaceAll(msg, pw, "xxxxx"), err}
}

// Open builds a pool from rawURL (Config) and brings the schema s up to
// date (Migrate), for a store that has a pool of its own; cfg is the
// pool's configuration (a listener connection copies it). The pool is
// closed on error; an error names the database, never the password.
func Open(ctx context.Context, rawURL string, o Options, s Schema) (pool *pgxpool.Pool, cfg *pgxpool.Config, err error) {
	cfg, err = Config(rawURL, o)
	if err != nil {
		return nil, nil, err
	}
	if pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", Where(cfg), Scrub(err, rawURL))
	}
	if err := Migrate(ctx, pool, s); err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("%s: %w", Where(cfg), Scrub(err, rawURL))
	}
	return pool, cfg, nil
}
