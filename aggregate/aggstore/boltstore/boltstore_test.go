package boltstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/aggstoretest"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/boltstore"
)

func openT(t *testing.T, path string, o *boltstore.Options) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	aggstoretest.Run(t, func(t *testing.T) aggstore.Store {
		return openT(t, filepath.Join(t.TempDir(), "aggregate.db"), &boltstore.Options{NoSync: true})
	})
}

// TestShared: one process, one handle, two node names.
func TestShared(t *testing.T) {
	aggstoretest.RunShared(t, func(t *testing.T) (a, b aggstore.Store) {
		s := openT(t, filepath.Join(t.TempDir(), "aggregate.db"), &boltstore.Options{NoSync: true})
		return s, s
	})
}

func TestDurable(t *testing.T) {
	aggstoretest.RunDurable(t, func(t *testing.T) func() aggstore.Store {
		path := filepath.Join(t.TempDir(), "aggregate.db")
		return func() aggstore.Store { return openT(t, path, nil) }
	})
}

// TestClock: leases follow the injected clock, not the wall clock.
func TestClock(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := openT(t, filepath.Join(t.TempDir(), "aggregate.db"), &boltstore.Options{NoSync: true, Now: func() time.Time { return now }})
	ctx := context.Background()
	if held, err := s.Claim(ctx, "A", "s", time.Minute); err != nil || !held {
		t.Fatalf("claim: %v %v", held, err)
	}
	id, err := s.StartRun(ctx, aggstore.Run{Source: "s", Node: "A"})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute) // expired exactly
	if held, err := s.Claim(ctx, "B", "s", time.Minute); err != nil || !held {
		t.Fatalf("takeover: %v %v", held, err)
	}
	rs, err := s.Runs(ctx, "s", 0)
	if err != nil || len(rs) != 1 || rs[0].ID != id || rs[0].State != aggstore.StateInterrupted || !rs[0].End.Equal(now) ||
		!rs[0].Start.Equal(now.Add(-time.Minute)) {
		t.Fatalf("runs after takeover: %+v %v", rs, err)
	}
}

func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aggregate.db")
	openT(t, path, nil)
	if _, err := boltstore.Open(path, &boltstore.Options{LockTimeout: 100 * time.Millisecond}); !errors.Is(err, boltstore.ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
}

// TestCorruptValue: a value that does not decode is an error, not a
// panic, in every reader.
func TestCorruptValue(t *testing.T) {
	for _, c := range []struct {
		bucket, key string
		read        func(s aggstore.Store) error
	}{
		{"schedules", "s", func(s aggstore.Store) error { _, err := s.Schedules(context.Background()); return err }},
		{"leases", "s", func(s aggstore.Store) error { _, err := s.Leases(context.Background()); return err }},
		{"leases", "s", func(s aggstore.Store) error {
			_, err := s.Claim(context.Background(), "A", "s", time.Minute)
			return err
		}},
		{"nodes", "A", func(s aggstore.Store) error {
			_, err := s.Heartbeat(context.Background(), "B", time.Minute)
			return err
		}},
		{"runs", "\x00\x00\x00\x00\x00\x00\x00\x01", func(s aggstore.Store) error { _, err := s.Runs(context.Background(), "s", 0); return err }},
		{"runs", "\x00\x00\x00\x00\x00\x00\x00\x01", func(s aggstore.Store) error {
			_, err := s.InterruptRuns(context.Background(), "A", time.Now())
			return err
		}},
	} {
		t.Run(c.bucket, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "aggregate.db")
			s := openT(t, path, nil)
			ctx := context.Background()
			// A run 1 on s, indexed and running, as StartRun leaves it.
			if _, err := s.Claim(ctx, "A", "s", time.Minute); err != nil {
				t.Fatal(err)
			}
			if _, err := s.StartRun(ctx, aggstore.Run{Source: "s", Node: "A"}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			db, err := bbolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bbolt.Tx) error {
				return tx.Bucket([]byte(c.bucket)).Put([]byte(c.key), []byte("{\x01garbage"))
			})
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
			s = openT(t, path, nil)
			if err := c.read(s); !errors.Is(err, boltstore.ErrCorrupt) {
				t.Fatalf("read of a damaged %s value: %v", c.bucket, err)
			}
		})
	}
}

func TestCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aggregate.db")
	if err := os.WriteFile(path, make([]byte, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := boltstore.Open(path, nil); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("open of a file of zeros: %v", err)
	}
}
