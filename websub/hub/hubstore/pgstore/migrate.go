package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrationLock is the key of the transaction-level advisory lock every
// migration step takes first, so that nodes starting at once apply each
// step exactly once, one after the other ("hubstore" in ASCII; the Source
// store uses a key of its own).
const migrationLock int64 = 0x6875627374_6f7265

// ErrSchemaTooNew is returned by Open when the database was migrated by a
// newer version of this package than the running one.
var ErrSchemaTooNew = errors.New("pgstore: the database schema is newer than this program knows; upgrade the program")

// migrations are the schema steps, applied in order; step i brings the
// schema to version i+1. Steps are never edited once released: a change
// is a new step.
var migrations = []string{
	// 1: topics, logs, subscriptions with claims, verification jobs,
	// dead letters.
	`
CREATE TABLE hub_topic (
	id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	topic text   NOT NULL UNIQUE,
	head  bigint NOT NULL DEFAULT 0 -- last seq appended: the row lock serializes appends
);
CREATE TABLE hub_log (
	topic_id     bigint NOT NULL REFERENCES hub_topic (id),
	seq          bigint NOT NULL,
	published    bigint NOT NULL, -- Unix nanoseconds (exact round trip)
	content_type text   NOT NULL,
	hub_url      text   NOT NULL,
	links        text[] NOT NULL,
	body         bytea  NOT NULL,
	PRIMARY KEY (topic_id, seq)
);
CREATE TABLE hub_sub (
	key         text   PRIMARY KEY,
	topic_id    bigint NOT NULL REFERENCES hub_topic (id),
	callback    text   NOT NULL,
	secret      text   NOT NULL,
	lease       bigint NOT NULL,
	expires     bigint NOT NULL,
	cursor      bigint NOT NULL,
	attempt     int    NOT NULL DEFAULT 0,
	first_fail  bigint NOT NULL DEFAULT 0,
	last_error  text   NOT NULL DEFAULT '',
	owner       text   NOT NULL DEFAULT '',
	lease_until timestamptz NOT NULL DEFAULT '-infinity',
	fence       bigint NOT NULL DEFAULT 0
);
CREATE INDEX hub_sub_topic ON hub_sub (topic_id, key);
CREATE INDEX hub_sub_lease ON hub_sub (lease_until);
CREATE INDEX hub_sub_owner ON hub_sub (owner, key);
CREATE INDEX hub_sub_expires ON hub_sub (expires);
CREATE TABLE hub_verif (
	id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	authority text NOT NULL,
	job       jsonb NOT NULL
);
CREATE INDEX hub_verif_authority ON hub_verif (authority);
CREATE TABLE hub_dead (
	id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	letter jsonb NOT NULL
);
CREATE TABLE hub_node (
	name        text PRIMARY KEY,
	lease_until timestamptz NOT NULL
);
CREATE INDEX hub_node_lease ON hub_node (lease_until);
`,
}

// migrate brings the database's schema to len(migrations), one step per
// transaction under the advisory lock; it is idempotent and safe to run
// from several processes at once.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	for {
		done, err := migrateStep(ctx, pool)
		if err != nil || done {
			return err
		}
	}
}

// migrateStep applies the next step, if any; done reports that the schema
// is current.
func migrateStep(ctx context.Context, pool *pgxpool.Pool) (done bool, err error) {
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS hub_schema (
	version    int PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
)`); err != nil {
			return err
		}
		var v int
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM hub_schema`).Scan(&v); err != nil {
			return err
		}
		switch {
		case v > len(migrations):
			return fmt.Errorf("%w (database at version %d, this program knows %d)", ErrSchemaTooNew, v, len(migrations))
		case v == len(migrations):
			done = true
			return nil
		}
		if _, err := tx.Exec(ctx, migrations[v]); err != nil {
			return fmt.Errorf("step %d: %w", v+1, err)
		}
		_, err := tx.Exec(ctx, `INSERT INTO hub_schema (version) VALUES ($1)`, v+1)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("pgstore: migrating the schema: %w", err)
	}
	return done, nil
}
