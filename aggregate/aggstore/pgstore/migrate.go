package pgstore

import (
	"errors"

	"github.com/resourcesync-go/resourcesync/internal/pgdb"
)

// migrationLock is the key of the transaction-level advisory lock every
// migration step takes first ("aggstore" in ASCII; the hub's store uses
// a key of its own).
const migrationLock int64 = 0x6167677374_6f7265

// ErrSchemaTooNew is returned by Open when the database was migrated by a
// newer version of this package than the running one.
var ErrSchemaTooNew = errors.New("pgstore: the aggregator's schema is newer than this program knows; upgrade the program")

// migrations are the schema steps, applied in order; step i brings the
// schema to version i+1. Steps are never edited once released: a change
// is a new step.
var migrations = []string{
	// 1: runs, schedules, leases, nodes. Strings are text (the store
	// cleans what it writes of invalid UTF-8 and NUL); zero times NULL.
	`
CREATE TABLE aggregate_runs (
	id       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	source   text        NOT NULL,
	node     text        NOT NULL,
	mode     text        NOT NULL,
	start_at timestamptz,
	end_at   timestamptz,
	state    text        NOT NULL,
	fetched  bigint      NOT NULL,
	deleted  bigint      NOT NULL,
	failed   bigint      NOT NULL,
	bytes    bigint      NOT NULL,
	lag_ns   bigint      NOT NULL,
	error    text        NOT NULL,
	reason   text        NOT NULL
);
CREATE INDEX aggregate_runs_source ON aggregate_runs (source, id);
CREATE INDEX aggregate_runs_running_source ON aggregate_runs (source) WHERE state = 'running';
CREATE INDEX aggregate_runs_running_node ON aggregate_runs (node) WHERE state = 'running';
CREATE TABLE aggregate_schedules (
	source       text PRIMARY KEY,
	next_at      timestamptz,
	failures     int    NOT NULL,
	last_success timestamptz,
	last_run     bigint NOT NULL
);
CREATE TABLE aggregate_leases (
	source  text        PRIMARY KEY,
	node    text        NOT NULL,
	expires timestamptz NOT NULL
);
CREATE INDEX aggregate_leases_node ON aggregate_leases (node);
CREATE TABLE aggregate_nodes (
	node    text        PRIMARY KEY,
	expires timestamptz NOT NULL
);
`,
	// 2: fencing. A lease's epoch numbers its tenure (from one sequence,
	// so increasing per Source even after a Forget); a run keeps the
	// epoch it started under; a node row and a lease keep the handle
	// (process) that heartbeats as the node and holds the lease. Rows of before carry epoch 0 and no
	// instance, which stay consistent until their next claim.
	`
CREATE SEQUENCE aggregate_lease_epochs;
ALTER TABLE aggregate_leases ADD COLUMN epoch bigint NOT NULL DEFAULT 0;
ALTER TABLE aggregate_leases ADD COLUMN instance text NOT NULL DEFAULT '';
ALTER TABLE aggregate_runs ADD COLUMN epoch bigint NOT NULL DEFAULT 0;
ALTER TABLE aggregate_nodes ADD COLUMN instance text NOT NULL DEFAULT '';
`,
}

// schema is the store's schema for pgdb.Open: a newer one is
// ErrSchemaTooNew.
var schema = pgdb.Schema{Lock: migrationLock, Table: "aggregate_schema", Steps: migrations, TooNew: ErrSchemaTooNew}
