package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
)

// migrations are applied in order, each in its own transaction; version
// N is migrations[N-1]. Never edit one that has shipped: append another.
var migrations = []string{
	// 1: the initial schema.
	`
CREATE TABLE environments (
	id TEXT PRIMARY KEY,
	project TEXT NOT NULL,
	type TEXT NOT NULL,
	binding BLOB,
	created_at INTEGER NOT NULL
);
CREATE TABLE sessions (
	id TEXT PRIMARY KEY,
	project TEXT NOT NULL,
	agent_kind TEXT NOT NULL,
	environment_id TEXT REFERENCES environments(id),
	options BLOB,
	created_at INTEGER NOT NULL
);
CREATE TABLE turns (
	id TEXT PRIMARY KEY,
	session_id TEXT NOT NULL REFERENCES sessions(id),
	input BLOB,
	state TEXT NOT NULL,
	attempts INTEGER NOT NULL DEFAULT 0,
	not_before INTEGER NOT NULL DEFAULT 0,
	device_id TEXT NOT NULL DEFAULT '',
	owner_epoch INTEGER NOT NULL DEFAULT 0,
	run_id TEXT NOT NULL DEFAULT '',
	input_cursor INTEGER NOT NULL DEFAULT 0,
	reason TEXT NOT NULL DEFAULT '',
	engine_error_code TEXT NOT NULL DEFAULT '',
	engine_http_status INTEGER NOT NULL DEFAULT 0,
	evidence BLOB,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE INDEX turns_due ON turns(state, not_before, created_at);
CREATE TABLE inputs (
	turn_id TEXT NOT NULL REFERENCES turns(id),
	seq INTEGER NOT NULL,
	id TEXT NOT NULL,
	content BLOB,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (turn_id, seq),
	UNIQUE (turn_id, id)
);
CREATE TABLE events (
	turn_id TEXT NOT NULL REFERENCES turns(id),
	seq INTEGER NOT NULL,
	run_id TEXT NOT NULL,
	type TEXT NOT NULL,
	payload BLOB,
	at INTEGER NOT NULL,
	PRIMARY KEY (turn_id, seq)
);
CREATE TABLE interactions (
	id TEXT PRIMARY KEY,
	turn_id TEXT NOT NULL REFERENCES turns(id),
	run_id TEXT NOT NULL,
	kind TEXT NOT NULL,
	request BLOB,
	state TEXT NOT NULL,
	answer BLOB,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE TABLE workspace_writes (
	mutation_id TEXT PRIMARY KEY,
	session_id TEXT NOT NULL,
	path TEXT NOT NULL,
	outcome TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	settled_at INTEGER NOT NULL DEFAULT 0
);
-- One unsettled write per Session: the reservation is this index.
CREATE UNIQUE INDEX workspace_writes_unsettled ON workspace_writes(session_id) WHERE outcome = '';
CREATE TABLE devices (
	id TEXT PRIMARY KEY,
	owner_epoch INTEGER NOT NULL,
	connected INTEGER NOT NULL,
	declaration BLOB,
	last_seen INTEGER NOT NULL
);
CREATE TABLE credentials (
	id TEXT PRIMARY KEY,
	kind TEXT NOT NULL,
	device_id TEXT NOT NULL DEFAULT '',
	project TEXT NOT NULL DEFAULT '',
	hash TEXT NOT NULL UNIQUE,
	created_at INTEGER NOT NULL,
	revoked_at INTEGER NOT NULL DEFAULT 0
);
`,
	// 2: a Session's native identity and whether a Turn of it started. The
	// trigger keeps StartTurn one conditional write that also marks the
	// Session.
	`
ALTER TABLE sessions ADD COLUMN started INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN native_session_id TEXT NOT NULL DEFAULT '';
CREATE TRIGGER turns_started AFTER UPDATE OF state ON turns
WHEN NEW.state = 'running' AND OLD.state <> 'running'
BEGIN
	UPDATE sessions SET started = 1 WHERE id = NEW.session_id;
END;
`,
	// 3: Environment initialization, its last outcome, and suspension
	// attempts (one unsettled attempt per Environment: the index).
	`
ALTER TABLE environments ADD COLUMN initialization BLOB;
CREATE TABLE environment_initializations (
	environment_id TEXT PRIMARY KEY REFERENCES environments(id),
	device_id TEXT NOT NULL,
	owner_epoch INTEGER NOT NULL,
	outcome TEXT NOT NULL,
	step TEXT NOT NULL,
	error_code TEXT NOT NULL,
	exit_code INTEGER NOT NULL,
	at INTEGER NOT NULL
);
CREATE TABLE suspensions (
	id TEXT PRIMARY KEY,
	environment_id TEXT NOT NULL,
	device_id TEXT NOT NULL,
	state TEXT NOT NULL,
	settled INTEGER NOT NULL,
	error_code TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX suspensions_open ON suspensions(environment_id) WHERE settled = 0;
CREATE INDEX suspensions_env ON suspensions(environment_id, created_at);
`,
	// 4: a workspace write's machine state, declared body, device, receipt
	// code and an operator's resolution of an unknown outcome.
	`
ALTER TABLE workspace_writes ADD COLUMN state TEXT NOT NULL DEFAULT '';
ALTER TABLE workspace_writes ADD COLUMN device_id TEXT NOT NULL DEFAULT '';
ALTER TABLE workspace_writes ADD COLUMN size_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE workspace_writes ADD COLUMN sha256 TEXT NOT NULL DEFAULT '';
ALTER TABLE workspace_writes ADD COLUMN error_code TEXT NOT NULL DEFAULT '';
ALTER TABLE workspace_writes ADD COLUMN reason TEXT NOT NULL DEFAULT '';
ALTER TABLE workspace_writes ADD COLUMN resolution TEXT NOT NULL DEFAULT '';
ALTER TABLE workspace_writes ADD COLUMN note TEXT NOT NULL DEFAULT '';
`,
	// 5: tenancy (docs/tenancy.md): a device belongs to a project, a
	// registered Environment to the device that hosts it. Devices recorded
	// before keep project '' and no project may use them until an
	// administrator assigns them (agentwire core device assign); local
	// Environments recorded before keep device_id '' and no device hosts
	// them. core serve lists both at start.
	`
ALTER TABLE devices ADD COLUMN project TEXT NOT NULL DEFAULT '';
ALTER TABLE environments ADD COLUMN device_id TEXT NOT NULL DEFAULT '';
CREATE INDEX environments_project ON environments(project, created_at);
`,
	// 6: a Session's Turns, newest first (GET /api/v1/sessions/{id}/turns).
	`
CREATE INDEX turns_session ON turns(session_id, created_at);
`,
	// 7: generic machine instances (store.Instances): a Core machine with
	// no record of its own persists here.
	`
CREATE TABLE instances (
	machine TEXT NOT NULL,
	key TEXT NOT NULL,
	state TEXT NOT NULL,
	version INTEGER NOT NULL,
	settled INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (machine, key)
);
CREATE INDEX instances_open ON instances(machine, updated_at) WHERE settled = 0;
`,
	// 8: a function call is answered by its call_id (POST
	// /api/v1/turns/{id}/function-results).
	`
ALTER TABLE interactions ADD COLUMN call_id TEXT NOT NULL DEFAULT '';
CREATE INDEX interactions_call ON interactions(turn_id, call_id) WHERE call_id != '';
`,
	// 9: Agents, versioned, and the Agent version a Session runs.
	`
CREATE TABLE agents (
	id TEXT NOT NULL,
	version INTEGER NOT NULL,
	project TEXT NOT NULL,
	definition BLOB NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (id, version)
);
CREATE INDEX agents_project ON agents(project, id);
ALTER TABLE sessions ADD COLUMN agent_id TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN agent_version INTEGER NOT NULL DEFAULT 0;
`,
	// 10: the Vault: a project's named secrets, sealed (core/vault).
	`
CREATE TABLE secrets (
	project TEXT NOT NULL,
	name TEXT NOT NULL,
	sealed BLOB NOT NULL,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	PRIMARY KEY (project, name)
);
`,
	// 11: Core replicas and the device owner lease of each epoch
	// (store.Replicas); expires 0 is a lease without expiry.
	`
ALTER TABLE devices ADD COLUMN replica_id TEXT NOT NULL DEFAULT '';
CREATE TABLE replicas (
	id TEXT PRIMARY KEY,
	url TEXT NOT NULL,
	started_at INTEGER NOT NULL,
	heartbeat_at INTEGER NOT NULL,
	retired INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE leases (
	device_id TEXT NOT NULL,
	epoch INTEGER NOT NULL,
	replica_id TEXT NOT NULL,
	expires INTEGER NOT NULL,
	ended INTEGER NOT NULL DEFAULT 0,
	reaped_by TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (device_id, epoch)
);
CREATE INDEX leases_open ON leases(replica_id) WHERE ended = 0;
CREATE INDEX turns_active ON turns(session_id) WHERE state IN ('claimed', 'cancelling', 'starting', 'running');
`,
	// 12: the owner epoch of the connection a workspace write was reserved
	// for and of the one carrying a suspension attempt, so that the
	// replica reaping that epoch's lease reconciles them; 0 in older rows.
	`
ALTER TABLE workspace_writes ADD COLUMN owner_epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE suspensions ADD COLUMN owner_epoch INTEGER NOT NULL DEFAULT 0;
`,
}

// SchemaVersion is the version a fully migrated database has.
func SchemaVersion() int { return len(migrations) }

// CreateAtVersion creates the database in dir with only the first version
// migrations, then runs seed (SQL; empty for none) on it: the data
// directory a build of that schema version left, for upgrade tests. Open
// migrates it the rest of the way.
func CreateAtVersion(ctx context.Context, dir string, version int, seed string) error {
	if version < 1 || version > len(migrations) {
		return fmt.Errorf("sqlite: no schema version %d (1 to %d)", version, len(migrations))
	}
	path := filepath.Join(dir, FileName)
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("sqlite: %s exists", path)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY)`); err != nil {
		return err
	}
	for v := 1; v <= version; v++ {
		if err := apply(ctx, db, v); err != nil {
			return fmt.Errorf("migration %d: %w", v, err)
		}
	}
	if seed != "" {
		if _, err := db.ExecContext(ctx, seed); err != nil {
			return fmt.Errorf("sqlite: seed: %w", err)
		}
	}
	return nil
}

func migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var have int
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if have > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this build knows (%d)", have, len(migrations))
	}
	for v := have + 1; v <= len(migrations); v++ {
		if err := apply(ctx, db, v); err != nil {
			return fmt.Errorf("migration %d: %w", v, err)
		}
	}
	return nil
}

func apply(ctx context.Context, db *sql.DB, v int) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, migrations[v-1]); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version) VALUES (?)`, v); err != nil {
		return err
	}
	return tx.Commit()
}
