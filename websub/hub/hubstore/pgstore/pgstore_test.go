package pgstore

import (
	"context"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/hubstoretest"
)

func openT(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url, &Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestContract(t *testing.T) {
	pgtest.Skip(t)
	hubstoretest.Run(t, func(t *testing.T) hubstore.Store { return openT(t, pgtest.Database(t)) })
}

func TestDurable(t *testing.T) {
	pgtest.Skip(t)
	hubstoretest.RunDurable(t, func(t *testing.T) func() hubstore.Store {
		url := pgtest.Database(t)
		return func() hubstore.Store { return openT(t, url) }
	})
}

func TestCluster(t *testing.T) {
	pgtest.Skip(t)
	hubstoretest.RunCluster(t, func(t *testing.T) (a, b hubstore.Store) {
		url := pgtest.Database(t)
		return openT(t, url), openT(t, url)
	})
}
