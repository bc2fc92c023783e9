package server

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/storeurl"
)

// backends are the state stores the server runs on, as a Config change:
// the embedded store (nil: the default), and PostgreSQL through the store
// URL that sdshare serve --store takes (skipped where pgtest cannot start
// a server). A test run over backends is the contract every state store
// must pass to serve SDShare.
var backends = []struct {
	name  string
	setup func(t *testing.T) func(*Config)
}{
	{"bolt", func(*testing.T) func(*Config) { return nil }},
	{"postgres", func(t *testing.T) func(*Config) {
		pgtest.Skip(t)
		u := pgtest.Database(t)
		return func(c *Config) {
			c.OpenStore = func(ctx context.Context, name string) (store.Store, error) { return storeurl.Open(ctx, u, name) }
		}
	}},
}

// forBackends runs f once per backend; with passes mod of newEnv (the
// backend's change, then more).
func forBackends(t *testing.T, f func(t *testing.T, with func(more func(*Config)) func(*Config))) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			mod := b.setup(t)
			f(t, func(more func(*Config)) func(*Config) {
				return func(c *Config) {
					if mod != nil {
						mod(c)
					}
					if more != nil {
						more(c)
					}
				}
			})
		})
	}
}

// TestSharedStoreOneWriter: a second server on the same PostgreSQL
// collection state does not start while the first holds it (it would
// journal the first one's changes again), and starts once the first is
// closed.
func TestSharedStoreOneWriter(t *testing.T) {
	pgtest.Skip(t)
	u := pgtest.Database(t)
	open := func(c *Config) {
		c.OpenStore = func(ctx context.Context, name string) (store.Store, error) { return storeurl.Open(ctx, u, name) }
		c.LeadTimeout = 100 * time.Millisecond
	}
	e := newEnv(t, map[string]string{"data.nt": fixture}, open)
	cfg := e.cfg
	cfg.StateDir = t.TempDir()
	if s, err := Open(context.Background(), cfg); !errors.Is(err, store.ErrLocked) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("second server: %v, want store.ErrLocked", err)
	}
	e.stop()
	// The first server's PostgreSQL session may take a moment to end
	// under load: wait for its lock longer than the 100 ms above.
	cfg.LeadTimeout = 10 * time.Second
	s, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}
