package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
)

// testAgents: versions follow one another, each written once; an ID
// belongs to one project; the latest or a given version is read back;
// a Session keeps the Agent version it was created with.
func testAgents(t *testing.T, s store.Store) {
	seed(t, s, 0)
	v := func(version int, def string) store.Agent {
		return store.Agent{ID: "ag-1", Project: "p", Version: version, Definition: raw(def), CreatedAt: T0.Add(time.Duration(version) * time.Second)}
	}
	assert.ErrorIs(t, s.PutAgent(ctx, v(2, `{"agent_kind":"codex"}`)), store.ErrConflict, "version 2 before 1")
	require.NoError(t, s.PutAgent(ctx, v(1, `{"agent_kind":"codex"}`)))
	assert.ErrorIs(t, s.PutAgent(ctx, v(1, `{"agent_kind":"claude"}`)), store.ErrConflict, "version 1 twice")
	require.NoError(t, s.PutAgent(ctx, v(2, `{"agent_kind":"codex","model":"m"}`)))
	other := v(3, `{}`)
	other.Project = "q"
	assert.ErrorIs(t, s.PutAgent(ctx, other), store.ErrConflict, "another project's Agent")
	assert.ErrorIs(t, s.PutAgent(ctx, store.Agent{ID: "ag-x", Version: 0}), store.ErrInvalid)

	latest, err := s.GetAgent(ctx, "ag-1", 0)
	require.NoError(t, err)
	assert.Equal(t, 2, latest.Version)
	assert.JSONEq(t, `{"agent_kind":"codex","model":"m"}`, string(latest.Definition))
	first, err := s.GetAgent(ctx, "ag-1", 1)
	require.NoError(t, err)
	assert.JSONEq(t, `{"agent_kind":"codex"}`, string(first.Definition))
	_, err = s.GetAgent(ctx, "ag-1", 3)
	assert.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.GetAgent(ctx, "nope", 0)
	assert.ErrorIs(t, err, store.ErrNotFound)

	require.NoError(t, s.PutAgent(ctx, store.Agent{ID: "ag-0", Project: "p", Version: 1, Definition: raw(`{}`), CreatedAt: T0.Add(time.Hour)}))
	list, err := s.ListAgents(ctx, "p")
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, []string{"ag-1", "ag-0"}, []string{list[0].ID, list[1].ID}, "oldest first")
	assert.Equal(t, 2, list[0].Version, "the latest version of each")
	none, err := s.ListAgents(ctx, "q")
	require.NoError(t, err)
	assert.Empty(t, none)

	require.NoError(t, s.CreateSession(ctx, store.Session{ID: "ses-ag", Project: "p", AgentKind: "codex", EnvironmentID: "env", AgentID: "ag-1", AgentVersion: 1, CreatedAt: T0}))
	ses, err := s.GetSession(ctx, "ses-ag")
	require.NoError(t, err)
	assert.Equal(t, "ag-1", ses.AgentID)
	assert.Equal(t, 1, ses.AgentVersion)
}
