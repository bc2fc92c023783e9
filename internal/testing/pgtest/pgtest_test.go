package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestDatabase(t *testing.T) {
	u := Database(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, "SELECT 40 + 2").Scan(&n); err != nil || n != 42 {
		t.Fatalf("SELECT: %d, %v", n, err)
	}
	if _, err := c.Exec(ctx, "CREATE TABLE x (a int)"); err != nil {
		t.Fatal(err)
	}
}
