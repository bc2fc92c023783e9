package storeurl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/source/store"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in       string
		dir      string
		postgres bool
		err      error
	}{
		{"bolt:/srv/state", "/srv/state", false, nil},
		{"postgres://u:pw@h/db", "", true, nil},
		{"postgresql://h/db", "", true, nil},
		{"bolt:", "", false, ErrNoPath},
		{"/srv/state", "/srv/state", false, nil},
		{"file:///srv/state", filepath.FromSlash("/srv/state"), false, nil},
		{"mem:x", "", false, nil},
		{"mysql://h/db", "", false, ErrScheme},
	} {
		u, err := Parse(tc.in)
		if !errors.Is(err, tc.err) || u.Dir != tc.dir || u.Postgres() != tc.postgres {
			t.Errorf("Parse(%q) = %+v (postgres %v), %v", tc.in, u, u.Postgres(), err)
		}
		if strings.Contains(u.String(), "pw") {
			t.Errorf("%q: String shows the password: %s", tc.in, u)
		}
	}
}

// TestOpen: bolt:DIR opens DIR/SET/state.db, the layout of a Source's
// StateDir; a postgres:// URL opens a shared set of the database.
func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := Open(ctx, "bolt:"+dir, "s")
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := os.Stat(filepath.Join(dir, "s", "state.db")); err != nil {
		t.Error(err)
	}
	t.Run("postgres", func(t *testing.T) {
		pgtest.Skip(t)
		st, err := Open(ctx, pgtest.Database(t), "s")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, ok := st.(store.Shared); !ok {
			t.Errorf("%T is not a store.Shared", st)
		}
	})
}
