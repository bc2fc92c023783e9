package hubstoreurl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/pgstore"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in  string
		dir string
		err error
	}{
		{"bolt:/srv/hub", "/srv/hub", nil},
		{"postgres://h/db", "", nil},
		{"bolt:", "", ErrNoPath},
		{"/srv/hub", "/srv/hub", nil},
		{"mem:a", "", nil},
		{"mysql://h/db", "", ErrScheme},
	} {
		if u, err := Parse(tc.in); !errors.Is(err, tc.err) || u.Dir != tc.dir {
			t.Errorf("Parse(%q) = %+v, %v", tc.in, u, err)
		}
	}
}

// TestOpen: bolt:DIR is DIR/hub.db, the file hub.Open opens in StateDir.
func TestOpen(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "new")
	st, err := Open(ctx, "bolt:"+dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := os.Stat(filepath.Join(dir, FileName)); err != nil {
		t.Error(err)
	}
	t.Run("postgres", func(t *testing.T) {
		pgtest.Skip(t)
		st, err := Open(ctx, pgtest.Database(t))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, ok := st.(*pgstore.Store); !ok {
			t.Errorf("%T, want *pgstore.Store", st)
		}
	})
}
