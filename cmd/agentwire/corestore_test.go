package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
)

// --store takes a PostgreSQL URL; the administration commands take it
// instead of --data, core serve beside --data (docs/deployment.md).
func TestStoreFlagIsChecked(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--data", t.TempDir(), "--store", "mysql://db/x"},
		{"serve", "--store", "postgres://db/x"},
		{"credential", "list", "--store", "sqlite:///x"},
		{"credential", "list"},
		{"devices", "--store", "host=db"},
		{"device", "assign", "--device", "d", "--project", "p"},
		{"device", "revoke", "--store", "db", "--device", "d"},
	} {
		var stderr bytes.Buffer
		err := runCore(args, io.Discard, &stderr)
		assert.ErrorIs(t, err, errUsage, "%v", args)
		assert.Regexp(t, `--store takes a postgres:// URL|--data or --store is required|--data is required`, stderr.String(), "%v", args)
	}
}
