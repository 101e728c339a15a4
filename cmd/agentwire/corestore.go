package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"strings"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/postgres"
	"github.com/agentwire/agentwire/core/store/sqlite"
)

// coreStore is what the core commands use of a store: both halves.
type coreStore interface {
	store.Store
	store.Credentials
	Close() error
}

// storeFlag adds --store: Core's store in a PostgreSQL database instead of
// the embedded SQLite one in --data (docs/deployment.md).
func storeFlag(fs *flag.FlagSet) *string {
	return fs.String("store", "", "keep Core's store in this PostgreSQL database instead of the embedded SQLite one in --data: "+
		"postgres://USER[:PASSWORD]@HOST:PORT/DATABASE?sslmode=... (any number of Core replicas may share one database; docs/deployment.md)")
}

// checkStore validates --store: a PostgreSQL URL or nothing.
func checkStore(dsn string) error {
	if dsn != "" && !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return errors.New("--store takes a postgres:// URL")
	}
	return nil
}

// openStore opens the PostgreSQL store dsn names, or, without one, the
// embedded store in a data directory, creating it.
func openStore(ctx context.Context, dir, dsn string) (coreStore, error) {
	if dsn != "" {
		return postgres.Open(ctx, dsn)
	}
	if dir == "" {
		return nil, errors.New("--data is required")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return sqlite.Open(ctx, dir)
}
