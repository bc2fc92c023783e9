package pgstore

import (
	"context"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// TestOpenWithoutCreate: once the schema is current, a role that may read
// and write the tables but not create any (what an operator gives the
// application's login, PostgreSQL 15's default on schema public) opens
// the store: a migration check must not need CREATE.
func TestOpenWithoutCreate(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	owner := pgtest.Database(t)
	openT(t, owner) // the schema, created by the owner
	role := "app_" + must(url.Parse(owner)).Path[1:]
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
		c, err := pgx.Connect(ctx, owner)
		if err == nil {
			c.Exec(ctx, `DROP OWNED BY `+role)
			c.Exec(ctx, `DROP ROLE `+role)
			c.Close(ctx)
		}
	})
	u := must(url.Parse(owner))
	u.User = url.User(role)
	s, err := Open(ctx, u.String(), nil)
	if err != nil {
		t.Fatalf("open as a role without CREATE: %v", err)
	}
	defer s.Close()
	if _, err := s.Append(ctx, "http://127.0.0.1/t", hubstore.Entry{ContentType: "text/plain", Body: []byte("x")}); err != nil {
		t.Errorf("append as that role: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
