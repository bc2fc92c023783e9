package pgdb

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Schema is a store's list of schema migrations.
type Schema struct {
	// Lock is the key of the transaction-level advisory lock every step
	// takes first, so that processes starting at once apply each step
	// exactly once, one after the other. Each store has its own (its name
	// in ASCII), so that stores sharing a database do not wait on each
	// other.
	Lock int64
	// Table is the version table ("rs_schema_migrations", "hub_schema"):
	// one row per applied step.
	Table string
	// Steps are the migrations in order: Steps[i] brings the schema to
	// version i+1. Append only; a released step never changes.
	Steps []string
	// TooNew is wrapped by Migrate's error when the database is at a
	// version beyond len(Steps): a newer program migrated it.
	TooNew error
	// Tx are the options of each step's transaction.
	Tx pgx.TxOptions
}

// Migrate brings the database's schema to len(s.Steps): one transaction
// per step, each under the advisory lock, each re-reading the version
// once it holds the lock. It is idempotent and safe to run from several
// processes at once. A database at a newer version is an error wrapping
// s.TooNew, and is not touched.
func Migrate(ctx context.Context, pool *pgxpool.Pool, s Schema) error {
	for {
		done, err := s.step(ctx, pool)
		if err != nil {
			return fmt.Errorf("migrating the schema: %w", err)
		}
		if done {
			return nil
		}
	}
}

// step applies the next step, if any; done reports that the schema is
// current.
func (s Schema) step(ctx context.Context, pool *pgxpool.Pool) (done bool, err error) {
	err = pgx.BeginTxFunc(ctx, pool, s.Tx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, s.Lock); err != nil {
			return err
		}
		// CREATE TABLE IF NOT EXISTS needs the CREATE privilege even when
		// the table exists: look first, so that a role without it opens a
		// current schema.
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, s.Table).Scan(&exists); err != nil {
			return err
		}
		table := pgx.Identifier{s.Table}.Sanitize()
		if !exists {
			if _, err := tx.Exec(ctx, `CREATE TABLE `+table+` (
	version    integer     PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
				return err
			}
		}
		var v int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+table).Scan(&v); err != nil {
			return err
		}
		switch {
		case v > len(s.Steps):
			return fmt.Errorf("%w (database at version %d, this program knows %d)", s.TooNew, v, len(s.Steps))
		case v == len(s.Steps):
			done = true
			return nil
		}
		if _, err := tx.Exec(ctx, s.Steps[v]); err != nil {
			return fmt.Errorf("step %d: %w", v+1, err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO `+table+` (version) VALUES ($1)`, v+1)
		return err
	})
	return done, err
}
