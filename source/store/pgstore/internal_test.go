package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

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

// FuzzScrub: the error of an unparsable URL never shows its password
// (only parsing runs here: no connection is attempted).
func FuzzScrub(f *testing.F) {
	for _, s := range [][2]string{
		{"s3cret", "h:notaport"}, {"p%40ss", "h:1"}, {"pa:ss", "[::1"}, {"a b", "h:5432/db?sslmode=bogus"},
		{"x@y", "h"}, {"pw", "h:99999999"}, {"'q'", "h:1?connect_timeout=x"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pw, rest string) {
		if strings.ContainsAny(pw, "/?#") {
			return
		}
		pw = "Zq9" + pw // a password that the rest of a message cannot spell by chance
		for _, raw := range []string{
			"postgres://user:" + pw + "@" + rest,
			"postgres://user:" + url.PathEscape(pw) + "@" + rest,
			"host=" + rest + " user=u password=" + pw,
			"host=" + rest + " user=u password='" + strings.ReplaceAll(pw, "'", `\'`) + "'",
		} {
			_, err := pgxpool.ParseConfig(raw)
			if err == nil {
				continue
			}
			msg := fmt.Errorf("pgstore: invalid PostgreSQL URL (host %s): %w", urlHost(raw), parseError(err, raw)).Error()
			if strings.Contains(msg, pw) && !strings.Contains(rest, pw) {
				t.Fatalf("%q: message shows the password %q: %s", raw, pw, msg)
			}
		}
	})
}
