package aggstoreurl_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/aggstoreurl"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/boltstore"
	"github.com/resourcesync-go/resourcesync/aggregate/aggstore/pgstore"
	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		raw, root string
		dir       string
		pg        bool
		name      string
		err       error
	}{
		{raw: "", root: "/srv/agg", dir: "/srv/agg/.aggregate", name: "/srv/agg/.aggregate/aggregate.db"},
		{raw: "bolt:/var/lib/agg", root: "/srv/agg", dir: "/var/lib/agg", name: "/var/lib/agg/aggregate.db"},
		{raw: "postgres://u:secret@db.example/agg", pg: true, name: "postgres://u:xxxxx@db.example/agg"},
		{raw: "postgresql://db.example/agg?password=secret", pg: true, name: "postgresql://db.example/agg?password=xxxxx"},
		{raw: "bolt:", err: aggstoreurl.ErrNoPath},
		{raw: "/var/lib/agg", root: "/srv/agg", dir: "/var/lib/agg", name: "/var/lib/agg/aggregate.db"},
		{raw: "mysql://u:secret@db.example/agg", err: aggstoreurl.ErrScheme},
	} {
		u, err := aggstoreurl.Parse(c.raw, c.root)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%q: error %v, want %v", c.raw, err, c.err)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("%q: error shows the password: %v", c.raw, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.raw, err)
			continue
		}
		if u.Dir != c.dir || u.Postgres() != c.pg || u.String() != c.name {
			t.Errorf("%q: dir %q pg %v name %q, want %q %v %q", c.raw, u.Dir, u.Postgres(), u.String(), c.dir, c.pg, c.name)
		}
	}
}

func TestOpenBolt(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	st, name, err := aggstoreurl.Open(ctx, "", root)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	want := filepath.Join(root, ".aggregate", "aggregate.db")
	if _, ok := st.(*boltstore.Store); !ok || name != want {
		t.Fatalf("default state: %T %q, want a boltstore at %q", st, name, want)
	}
	fi, err := os.Stat(filepath.Dir(want))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("state directory: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(want); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "a", "b")
	st2, name, err := aggstoreurl.Open(ctx, "bolt:"+dir, root)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if name != filepath.Join(dir, "aggregate.db") {
		t.Fatalf("bolt:DIR name %q", name)
	}
	if _, err := st2.Heartbeat(ctx, "A", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, _, err := aggstoreurl.Open(ctx, "sqlite:x", root); !errors.Is(err, aggstoreurl.ErrScheme) {
		t.Fatalf("unknown scheme: %v", err)
	}
}

func TestOpenPostgres(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	// Trust authentication ignores the password: it must not show in the
	// name.
	url := strings.Replace(pgtest.Database(t), "postgres@", "postgres:secret@", 1)
	st, name, err := aggstoreurl.Open(ctx, url, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok := st.(*pgstore.Store); !ok || strings.Contains(name, "secret") || !strings.HasPrefix(name, "postgres://postgres:xxxxx@127.0.0.1:") {
		t.Fatalf("postgres state: %T %q", st, name)
	}
	if _, err := st.Heartbeat(ctx, "A", time.Minute); err != nil {
		t.Fatal(err)
	}
	_, name, err = aggstoreurl.Open(ctx, "postgres://postgres:secret@127.0.0.1:1/none?connect_timeout=2", "")
	if err == nil || strings.Contains(err.Error(), "secret") || strings.Contains(name, "secret") {
		t.Fatalf("unreachable database: %q %v", name, err)
	}
}
