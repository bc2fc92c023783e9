package pgstore_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/resourcesync-go/resourcesync/internal/pgtest"
	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store/pgstore"
)

// TestOpenWithoutCreate: once the schema is current, a role that may read
// and write the tables but not create any opens a set (a new one too) and
// scans into it.
func TestOpenWithoutCreate(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	owner := pgtest.Database(t)
	open(t, owner, "first")
	ou, _ := url.Parse(owner)
	role := "app_" + ou.Path[1:]
	c, err := pgx.Connect(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	for _, q := range []string{
		`CREATE ROLE ` + role + ` LOGIN`,
		`REVOKE CREATE ON SCHEMA public FROM PUBLIC`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO ` + role,
		`GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO ` + role,
	} {
		if _, err := c.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		if c, err := pgx.Connect(ctx, owner); err == nil {
			c.Exec(ctx, `DROP OWNED BY `+role)
			c.Exec(ctx, `DROP ROLE `+role)
			c.Close(ctx)
		}
	})
	ou.User = url.User(role)
	for _, set := range []string{"first", "second"} {
		s, err := pgstore.Open(ctx, ou.String(), set, nil)
		if err != nil {
			t.Fatalf("open set %s as a role without CREATE: %v", set, err)
		}
		root := t.TempDir()
		os.WriteFile(filepath.Join(root, "a"), []byte("a"), 0o644)
		sc, err := scan.New(scan.Options{Root: root, Store: s})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sc.Scan(ctx); err != nil {
			t.Errorf("scan into set %s as that role: %v", set, err)
		}
		s.Close()
	}
}
