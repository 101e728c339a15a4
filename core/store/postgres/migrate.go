package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations are applied in order, each in its own transaction; version
// N is migrations[N-1]. Never edit one that has shipped: append another.
//
// Version 1 is the whole schema SQLite reached in its ten versions, in
// PostgreSQL's types: times are timestamptz (NULL for the zero time),
// payloads bytea (kept byte for byte: jsonb would rewrite them and change
// the sizes the journal reports), flags boolean. Where SQLite orders by
// rowid, a table has an identity column n. A Turn numbers its inputs and
// events with counters on its own row (input_seq, event_seq): the
// increment locks the row, so concurrent appends serialize on it, where a
// MAX(seq)+1 computed from a statement's snapshot would collide.
var migrations = []string{
	`
CREATE TABLE environments (
	id text PRIMARY KEY,
	project text NOT NULL,
	type text NOT NULL,
	binding bytea,
	initialization bytea,
	device_id text NOT NULL DEFAULT '',
	created_at timestamptz
);
CREATE INDEX environments_project ON environments(project, created_at);
CREATE TABLE sessions (
	id text PRIMARY KEY,
	project text NOT NULL,
	agent_kind text NOT NULL,
	environment_id text REFERENCES environments(id),
	options bytea,
	created_at timestamptz,
	started boolean NOT NULL DEFAULT false,
	native_session_id text NOT NULL DEFAULT '',
	agent_id text NOT NULL DEFAULT '',
	agent_version integer NOT NULL DEFAULT 0
);
CREATE INDEX sessions_project ON sessions(project);
CREATE TABLE turns (
	n bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
	id text PRIMARY KEY,
	session_id text NOT NULL REFERENCES sessions(id),
	input bytea,
	state text NOT NULL,
	attempts integer NOT NULL DEFAULT 0,
	not_before timestamptz,
	device_id text NOT NULL DEFAULT '',
	owner_epoch bigint NOT NULL DEFAULT 0,
	run_id text NOT NULL DEFAULT '',
	input_cursor bigint NOT NULL DEFAULT 0,
	input_seq bigint NOT NULL DEFAULT 0,
	event_seq bigint NOT NULL DEFAULT 0,
	reason text NOT NULL DEFAULT '',
	engine_error_code text NOT NULL DEFAULT '',
	engine_http_status integer NOT NULL DEFAULT 0,
	evidence bytea,
	created_at timestamptz,
	updated_at timestamptz
);
-- DueTurns: the queued Turns in order, and each one's older queued
-- sibling of its Session.
CREATE INDEX turns_queued ON turns(created_at, n) WHERE state = 'queued';
CREATE INDEX turns_queued_session ON turns(session_id, created_at, n) WHERE state = 'queued';
CREATE INDEX turns_session ON turns(session_id, created_at, n);
CREATE INDEX turns_active ON turns(created_at, n) WHERE state IN ('claimed', 'cancelling', 'starting', 'running');
-- A Turn that runs marks its Session started in the same statement, so
-- the start stays one conditional write. Only a Session not yet started
-- is updated (and locked).
CREATE FUNCTION turns_started() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE sessions SET started = true WHERE id = NEW.session_id AND NOT started;
	RETURN NULL;
END;
$$;
CREATE TRIGGER turns_started AFTER UPDATE OF state ON turns
	FOR EACH ROW WHEN (NEW.state = 'running' AND OLD.state <> 'running')
	EXECUTE FUNCTION turns_started();
CREATE TABLE inputs (
	turn_id text NOT NULL REFERENCES turns(id),
	seq bigint NOT NULL,
	id text NOT NULL,
	content bytea,
	created_at timestamptz,
	PRIMARY KEY (turn_id, seq),
	UNIQUE (turn_id, id)
);
CREATE TABLE events (
	turn_id text NOT NULL REFERENCES turns(id),
	seq bigint NOT NULL,
	run_id text NOT NULL,
	type text NOT NULL,
	payload bytea,
	at timestamptz,
	PRIMARY KEY (turn_id, seq)
);
CREATE TABLE interactions (
	id text PRIMARY KEY,
	turn_id text NOT NULL REFERENCES turns(id),
	run_id text NOT NULL,
	kind text NOT NULL,
	call_id text NOT NULL DEFAULT '',
	request bytea,
	state text NOT NULL,
	answer bytea,
	created_at timestamptz,
	updated_at timestamptz
);
CREATE INDEX interactions_call ON interactions(turn_id, call_id) WHERE call_id <> '';
CREATE TABLE workspace_writes (
	mutation_id text PRIMARY KEY,
	session_id text NOT NULL,
	path text NOT NULL,
	outcome text NOT NULL DEFAULT '',
	created_at timestamptz,
	settled_at timestamptz,
	state text NOT NULL DEFAULT '',
	device_id text NOT NULL DEFAULT '',
	size_bytes bigint NOT NULL DEFAULT 0,
	sha256 text NOT NULL DEFAULT '',
	error_code text NOT NULL DEFAULT '',
	reason text NOT NULL DEFAULT '',
	resolution text NOT NULL DEFAULT '',
	note text NOT NULL DEFAULT ''
);
-- One unsettled write per Session: the reservation is this index.
CREATE UNIQUE INDEX workspace_writes_unsettled ON workspace_writes(session_id) WHERE outcome = '';
CREATE TABLE devices (
	id text PRIMARY KEY,
	project text NOT NULL DEFAULT '',
	owner_epoch bigint NOT NULL,
	connected boolean NOT NULL,
	declaration bytea,
	last_seen timestamptz
);
CREATE TABLE credentials (
	n bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
	id text PRIMARY KEY,
	kind text NOT NULL,
	device_id text NOT NULL DEFAULT '',
	project text NOT NULL DEFAULT '',
	hash text NOT NULL UNIQUE,
	created_at timestamptz,
	revoked_at timestamptz
);
CREATE TABLE environment_initializations (
	environment_id text PRIMARY KEY REFERENCES environments(id),
	device_id text NOT NULL,
	owner_epoch bigint NOT NULL,
	outcome text NOT NULL,
	step text NOT NULL,
	error_code text NOT NULL,
	exit_code integer NOT NULL,
	at timestamptz
);
CREATE TABLE suspensions (
	id text PRIMARY KEY,
	environment_id text NOT NULL,
	device_id text NOT NULL,
	state text NOT NULL,
	settled boolean NOT NULL,
	error_code text NOT NULL DEFAULT '',
	created_at timestamptz,
	updated_at timestamptz
);
-- One unsettled attempt per Environment.
CREATE UNIQUE INDEX suspensions_open ON suspensions(environment_id) WHERE NOT settled;
CREATE INDEX suspensions_env ON suspensions(environment_id, created_at);
CREATE TABLE instances (
	machine text NOT NULL,
	key text NOT NULL,
	state text NOT NULL,
	version bigint NOT NULL,
	settled boolean NOT NULL,
	updated_at timestamptz,
	PRIMARY KEY (machine, key)
);
CREATE INDEX instances_open ON instances(machine, updated_at) WHERE NOT settled;
CREATE TABLE agents (
	id text NOT NULL,
	version integer NOT NULL,
	project text NOT NULL,
	definition bytea NOT NULL,
	created_at timestamptz,
	PRIMARY KEY (id, version)
);
CREATE INDEX agents_project ON agents(project, id);
CREATE TABLE secrets (
	project text NOT NULL,
	name text NOT NULL,
	sealed bytea NOT NULL,
	created_at timestamptz,
	updated_at timestamptz,
	PRIMARY KEY (project, name)
);
`,
	// 2: Core replicas and the device owner lease of each epoch
	// (store.Replicas); a NULL expiry is a lease without one.
	`
ALTER TABLE devices ADD COLUMN replica_id text NOT NULL DEFAULT '';
CREATE TABLE replicas (
	id text PRIMARY KEY,
	url text NOT NULL,
	started_at timestamptz,
	heartbeat_at timestamptz,
	retired boolean NOT NULL DEFAULT false,
	n bigserial
);
CREATE TABLE leases (
	device_id text NOT NULL,
	epoch bigint NOT NULL,
	replica_id text NOT NULL,
	expires timestamptz,
	ended boolean NOT NULL DEFAULT false,
	reaped_by text NOT NULL DEFAULT '',
	PRIMARY KEY (device_id, epoch)
);
CREATE INDEX leases_open ON leases(replica_id) WHERE NOT ended;
CREATE INDEX leases_expiring ON leases(expires) WHERE NOT ended;
CREATE INDEX turns_active_session ON turns(session_id) WHERE state IN ('claimed', 'cancelling', 'starting', 'running');
`,
	// 3: the owner epoch of the connection a workspace write was reserved
	// for and of the one carrying a suspension attempt, so that the
	// replica reaping that epoch's lease reconciles them; 0 in older rows.
	`
ALTER TABLE workspace_writes ADD COLUMN owner_epoch bigint NOT NULL DEFAULT 0;
ALTER TABLE suspensions ADD COLUMN owner_epoch bigint NOT NULL DEFAULT 0;
`,
}

// SchemaVersion is the version a fully migrated database has.
func SchemaVersion() int { return len(migrations) }

// migrateLock is the advisory lock (scoped to the database) that
// serializes Cores migrating one database at once: each migration is
// applied by exactly one of them.
const migrateLock = 0x61677769726531 // "agwire1"

// migrate applies the migrations the database lacks, one transaction
// each; it refuses a database from a newer build.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	for {
		done, err := migrateOne(ctx, pool)
		if err != nil || done {
			return err
		}
	}
}

// migrateOne applies the next missing migration under the lock, or
// reports that none is missing.
func migrateOne(ctx context.Context, pool *pgxpool.Pool) (done bool, err error) {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("migrate: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLock)); err != nil {
		return false, fmt.Errorf("migrate: taking the migration lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return false, fmt.Errorf("migrate: %w", err)
	}
	var have int
	if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return false, fmt.Errorf("migrate: reading the schema version: %w", err)
	}
	switch {
	case have > len(migrations):
		return false, fmt.Errorf("schema version %d is newer than this build knows (%d)", have, len(migrations))
	case have == len(migrations):
		return true, tx.Commit(ctx)
	}
	v := have + 1
	// No arguments: pgx sends it as one simple query, several statements.
	if _, err := tx.Exec(ctx, migrations[v-1]); err != nil {
		return false, fmt.Errorf("migration %d: %w", v, err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations(version) VALUES ($1)`, v); err != nil {
		return false, fmt.Errorf("migration %d: %w", v, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("migration %d: commit: %w", v, err)
	}
	return false, nil
}
