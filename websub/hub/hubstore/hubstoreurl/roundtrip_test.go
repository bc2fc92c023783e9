package hubstoreurl_test

import (
	"context"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/locationtest"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/hubstoreurl"
)

// TestRoundTrip: every spelling of a hub store location opens, keeps what
// was written across a close, and opens the same state again.
func TestRoundTrip(t *testing.T) {
	forms := append(locationtest.Local(t), locationtest.Mem())
	t.Run("pg", func(t *testing.T) {
		locationtest.RoundTrip(t, []locationtest.Form{locationtest.Postgres(t)}, hubstoreurl.Open, write, read)
	})
	locationtest.RoundTrip(t, forms, hubstoreurl.Open, write, read)
}

func write(t *testing.T, s hubstore.Store) {
	if _, err := s.Append(context.Background(), "http://t.example/", hubstore.Entry{ContentType: "text/plain", Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, s hubstore.Store) {
	if h, err := s.Head(context.Background(), "http://t.example/"); err != nil || h != 1 {
		t.Fatalf("read back head %d, %v", h, err)
	}
}

// TestUnknownScheme: an unknown scheme names the known ones; no error
// shows a password.
func TestUnknownScheme(t *testing.T) {
	locationtest.Unknown(t, func(ctx context.Context, loc string) error {
		st, err := hubstoreurl.Open(ctx, loc)
		if err == nil {
			st.Close()
		}
		return err
	}, hubstoreurl.ErrScheme, []string{"bolt", "file", "mem", "postgres", "postgresql"})
}
