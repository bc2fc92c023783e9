package pgstore

import (
	"errors"

	"github.com/resourcesync-go/resourcesync/internal/pgdb"
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
	// 1: topic logs, subscriptions with their claims, verification jobs
	// with theirs, dead letters. An unheld claim has holder NULL and
	// lease_until -infinity, so that "free or expired" is one range scan
	// of the lease index.
	`
CREATE TABLE hub_topics (
	id    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	topic bytea  NOT NULL UNIQUE,
	head  bigint NOT NULL -- last seq appended; its row lock serializes the appends of a topic
);
CREATE TABLE hub_entries (
	topic_id     bigint      NOT NULL REFERENCES hub_topics (id),
	seq          bigint      NOT NULL,
	published    timestamptz,
	content_type bytea       NOT NULL,
	hub_url      bytea       NOT NULL,
	links        bytea[],
	body         bytea       NOT NULL,
	PRIMARY KEY (topic_id, seq)
);
CREATE TABLE hub_subs (
	key         bytea       PRIMARY KEY,
	topic       bytea       NOT NULL,
	callback    bytea       NOT NULL,
	secret      bytea       NOT NULL,
	lease       bigint      NOT NULL,
	expires     timestamptz,
	cursor      bigint      NOT NULL,
	attempt     int         NOT NULL,
	first_fail  timestamptz,
	last_error  bytea       NOT NULL,
	next_at     timestamptz,
	holder      text,
	lease_until timestamptz NOT NULL DEFAULT '-infinity'
);
CREATE INDEX hub_subs_topic ON hub_subs (topic, key);
CREATE INDEX hub_subs_holder ON hub_subs (holder, key);
CREATE INDEX hub_subs_lease ON hub_subs (lease_until);
CREATE TABLE hub_jobs (
	id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	key          bytea       NOT NULL,
	host         bytea       NOT NULL,
	mode         text        NOT NULL,
	topic        bytea       NOT NULL,
	callback     bytea       NOT NULL,
	secret       bytea       NOT NULL,
	lease        bigint      NOT NULL,
	verify_token bytea       NOT NULL,
	has_token    boolean     NOT NULL,
	attempts     int         NOT NULL,
	next_at      timestamptz NOT NULL, -- the zero time is -infinity: due at once, first in the index
	holder       text,
	lease_until  timestamptz NOT NULL DEFAULT '-infinity'
);
CREATE INDEX hub_jobs_key ON hub_jobs (key, id);
CREATE INDEX hub_jobs_host ON hub_jobs (host);
CREATE INDEX hub_jobs_next ON hub_jobs (next_at);
CREATE INDEX hub_jobs_holder ON hub_jobs (holder);
CREATE TABLE hub_nodes (
	node        text        PRIMARY KEY,
	lease_until timestamptz NOT NULL
);
CREATE INDEX hub_nodes_lease ON hub_nodes (lease_until);
-- Row counts kept by statement triggers, so that Claim and Counts read
-- one row instead of counting a table.
CREATE TABLE hub_counts (
	name text   PRIMARY KEY,
	n    bigint NOT NULL
);
INSERT INTO hub_counts VALUES ('subs', 0), ('jobs', 0), ('dead', 0);
CREATE FUNCTION hub_count_ins() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE k bigint;
BEGIN
	SELECT count(*) INTO k FROM new_rows;
	IF k > 0 THEN UPDATE hub_counts SET n = n + k WHERE name = TG_ARGV[0]; END IF;
	RETURN NULL;
END $$;
CREATE FUNCTION hub_count_del() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE k bigint;
BEGIN
	SELECT count(*) INTO k FROM old_rows;
	IF k > 0 THEN UPDATE hub_counts SET n = n - k WHERE name = TG_ARGV[0]; END IF;
	RETURN NULL;
END $$;
CREATE TABLE hub_dead (
	id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	topic        bytea       NOT NULL,
	callback     bytea       NOT NULL,
	seq          bigint      NOT NULL,
	published    timestamptz,
	content_type bytea       NOT NULL,
	hub_url      bytea       NOT NULL,
	links        bytea[],
	body         bytea       NOT NULL,
	attempts     int         NOT NULL,
	first_fail   timestamptz,
	last_error   bytea       NOT NULL,
	at           timestamptz
);
CREATE TRIGGER hub_subs_ins AFTER INSERT ON hub_subs REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION hub_count_ins('subs');
CREATE TRIGGER hub_subs_del AFTER DELETE ON hub_subs REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION hub_count_del('subs');
CREATE TRIGGER hub_jobs_ins AFTER INSERT ON hub_jobs REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION hub_count_ins('jobs');
CREATE TRIGGER hub_jobs_del AFTER DELETE ON hub_jobs REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION hub_count_del('jobs');
CREATE TRIGGER hub_dead_ins AFTER INSERT ON hub_dead REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION hub_count_ins('dead');
CREATE TRIGGER hub_dead_del AFTER DELETE ON hub_dead REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION hub_count_del('dead');
`,
}

// schema is the store's schema for pgdb.Open: a newer one is
// ErrSchemaTooNew.
var schema = pgdb.Schema{Lock: migrationLock, Table: "hub_schema", Steps: migrations, TooNew: ErrSchemaTooNew}
