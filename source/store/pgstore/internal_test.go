package pgstore

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/resourcesync-go/resourcesync/source/store"
)

// TestWrap: the server's error codes map to the store's errors (a full
// disk cannot be provoked on the shared test server).
func TestWrap(t *testing.T) {
	s := &Store{where: "h:5432/db"}
	ctx := context.Background()
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		ctx  context.Context
		err  error
		want error
	}{
		{ctx, &pgconn.PgError{Code: "53100", Message: "could not extend file"}, store.ErrNoSpace},
		{ctx, fmt.Errorf("copy: %w", &pgconn.PgError{Code: "53100"}), store.ErrNoSpace},
		{ctx, &pgconn.PgError{Code: "23505", Detail: "Key (set_id, path)=(1, \\x61) already exists."}, store.ErrConflict},
		{ctx, fmt.Errorf("%w: x", store.ErrTimeOrder), store.ErrTimeOrder},
		{canceled, errors.New("conn closed"), context.Canceled},
	} {
		if got := s.wrap(tc.ctx, "apply", tc.err); !errors.Is(got, tc.want) {
			t.Errorf("wrap(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	s.closed.Store(true)
	if got := s.wrap(ctx, "get", errors.New("closed pool")); !errors.Is(got, store.ErrClosed) {
		t.Errorf("after Close: %v", got)
	}
}
