package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
)

// SessionLister is a store that can list Sessions (the memory and SQLite
// stores; the web console uses ListSessions when the store has it).
type SessionLister interface {
	CreateSession(ctx context.Context, s store.Session) error
	ListSessions(ctx context.Context, project string, limit int) ([]store.Session, error)
}

// RunListSessions checks ListSessions: a project's Sessions only, newest
// first, bounded by limit; "" lists every project's.
func RunListSessions(t *testing.T, s SessionLister) {
	ctx := context.Background()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, x := range []store.Session{
		{ID: "ses-a", Project: "p1", AgentKind: "script", CreatedAt: at},
		{ID: "ses-b", Project: "p2", AgentKind: "script", CreatedAt: at.Add(time.Second)},
		{ID: "ses-c", Project: "p1", AgentKind: "script", CreatedAt: at.Add(2 * time.Second)},
	} {
		require.NoError(t, s.CreateSession(ctx, x), "session %d", i)
	}
	ids := func(project string, limit int) []string {
		list, err := s.ListSessions(ctx, project, limit)
		require.NoError(t, err)
		out := []string{}
		for _, x := range list {
			out = append(out, x.ID)
		}
		return out
	}
	require.Equal(t, []string{"ses-c", "ses-a"}, ids("p1", 0))
	require.Equal(t, []string{"ses-c"}, ids("p1", 1))
	require.Equal(t, []string{"ses-c", "ses-b", "ses-a"}, ids("", 10))
	require.Equal(t, []string{}, ids("nobody", 10))
}
