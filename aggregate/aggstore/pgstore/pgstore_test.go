package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/aggstoretest"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/pgstore"
	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	hubpg "github.com/resourcesync-go/resourcesync/websub/hub/hubstore/pgstore"
)

func openT(t *testing.T, url string) *pgstore.Store {
	t.Helper()
	s, err := pgstore.Open(context.Background(), url, &pgstore.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	pgtest.Skip(t)
	aggstoretest.Run(t, func(t *testing.T) aggstore.Store { return openT(t, pgtest.Database(t)) })
}

// TestShared: two handles on one database are two nodes.
func TestShared(t *testing.T) {
	pgtest.Skip(t)
	aggstoretest.RunShared(t, func(t *testing.T) (a, b aggstore.Store) {
		url := pgtest.Database(t)
		return openT(t, url), openT(t, url)
	})
}

func TestDurable(t *testing.T) {
	pgtest.Skip(t)
	aggstoretest.RunDurable(t, func(t *testing.T) func() aggstore.Store {
		url := pgtest.Database(t)
		return func() aggstore.Store { return openT(t, url) }
	})
}

// TestSharesDatabaseWithHub: the hub's store and this one migrate one
// database, in either order, and both open again.
func TestSharesDatabaseWithHub(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	url := pgtest.Database(t)
	a := openT(t, url)
	h, err := hubpg.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	a.Close()
	if _, err := openT(t, url).Heartbeat(ctx, "A", 1e9); err != nil {
		t.Fatal(err)
	}
	h, err = hubpg.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
}

// BenchmarkFence: the check a run makes before each commit of its
// mirror's state and each deletion.
func BenchmarkFence(b *testing.B) {
	pgtest.Skip(b)
	ctx := context.Background()
	s, err := pgstore.Open(ctx, pgtest.Database(b), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Claim(ctx, "A", "s", time.Hour); err != nil {
		b.Fatal(err)
	}
	id, err := s.StartRun(ctx, aggstore.Run{Source: "s", Node: "A"})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := s.Fence(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
}
