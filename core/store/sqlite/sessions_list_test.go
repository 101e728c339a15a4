package sqlite_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store/sqlite"
	"github.com/agentwire/agentwire/core/store/storetest"
)

func TestListSessions(t *testing.T) {
	s, err := sqlite.Open(context.Background(), t.TempDir())
	require.NoError(t, err)
	defer s.Close()
	storetest.RunListSessions(t, s)
}
