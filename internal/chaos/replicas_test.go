package chaos

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplicaFault is `make test-replicas`: three real Core replicas on a
// real PostgreSQL, two real Runtimes, a load of Turns with active input
// and permission answers sent through the replicas that do not hold the
// devices, and the replica that holds them SIGKILLed mid-load; then the
// chaos checker (docs/chaos.md). It needs the server (the make target
// starts a throwaway one) and the binaries the target builds.
func TestReplicaFault(t *testing.T) {
	dsn, bins := os.Getenv("AGENTWIRE_TEST_POSTGRES"), os.Getenv("AGENTWIRE_REPLICA_BINS")
	if dsn == "" || bins == "" {
		msg := "needs a PostgreSQL server and the built binaries (AGENTWIRE_TEST_POSTGRES, AGENTWIRE_REPLICA_BINS): `make test-replicas` runs it"
		if os.Getenv("AGENTWIRE_REQUIRE_POSTGRES") == "1" && bins != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	var out strings.Builder
	res, err := Run(context.Background(), Config{
		Seed: 27, Turns: 90, Cuts: 0, Budget: 4 * time.Minute, Dir: t.TempDir(),
		Bin: filepath.Join(bins, "agentwire"), Agent: filepath.Join(bins, "echo-agent"),
		Caps:     filepath.Join(root, "examples", "echo-agent", "capabilities.json"),
		Out:      &out,
		Replicas: 3, Store: dsn,
	})
	res.Report(&out, 27)
	t.Log(out.String())
	require.NoError(t, err)
	assert.Empty(t, res.Violations)
	assert.Equal(t, 1, res.Kills["core-0"], "the replica holding the devices was killed")
	assert.Equal(t, 3, res.CoreGens, "no replica was started again")
	assert.GreaterOrEqual(t, res.Turns, 90)
	assert.Positive(t, res.Inputs, "active inputs went through replicas that forwarded them")
	assert.Positive(t, res.Answers)
	assert.Positive(t, res.ReplicaLost, "Turns running on the killed replica were reconciled by another")
}
