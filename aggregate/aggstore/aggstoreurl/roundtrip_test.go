package aggstoreurl_test

import (
	"context"
	"testing"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/aggstoreurl"
	"github.com/resourcesync-go/resourcesync/internal/testing/locationtest"
)

// TestRoundTrip: every spelling of an aggregator state location opens,
// keeps what was written across a close, and opens the same state again.
// There is no in-memory aggregator store.
func TestRoundTrip(t *testing.T) {
	t.Run("pg", func(t *testing.T) {
		locationtest.RoundTrip(t, []locationtest.Form{locationtest.Postgres(t)}, open, write, read)
	})
	locationtest.RoundTrip(t, locationtest.Local(t), open, write, read)
}

func open(ctx context.Context, loc string) (aggstore.Store, error) {
	st, _, err := aggstoreurl.Open(ctx, loc, "")
	return st, err
}

func write(t *testing.T, s aggstore.Store) {
	if err := s.PutSchedule(context.Background(), aggstore.Schedule{Source: "a", Failures: 2}); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, s aggstore.Store) {
	ss, err := s.Schedules(context.Background())
	if err != nil || len(ss) != 1 || ss[0].Source != "a" || ss[0].Failures != 2 {
		t.Fatalf("read back %+v, %v", ss, err)
	}
}

// TestUnknownScheme: an unknown scheme names the known ones; no error
// shows a password.
func TestUnknownScheme(t *testing.T) {
	locationtest.Unknown(t, func(ctx context.Context, loc string) error {
		st, err := open(ctx, loc)
		if err == nil {
			st.Close()
		}
		return err
	}, aggstoreurl.ErrScheme, []string{"bolt", "file", "postgres", "postgresql"})
}
