package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// sessionReadCounter counts the Session reads the scheduler makes to plan Turns.
type sessionReadCounter struct {
	store.Store
	sessionReads atomic.Int64
}

func (s *sessionReadCounter) GetSession(ctx context.Context, id string) (store.Session, error) {
	s.sessionReads.Add(1)
	return s.Store.GetSession(ctx, id)
}

// queueFor stores a Session of project and kind with n queued Turns,
// created at at.
func (e *env) queueFor(project, kind, name string, n int, at time.Time) []store.Turn {
	ctx := context.Background()
	envID, sesID := "env-"+name, "ses-"+name
	require.NoError(e.t, e.store.CreateEnvironment(ctx, store.Environment{ID: envID, Project: project, Type: "none", CreatedAt: at}))
	require.NoError(e.t, e.store.CreateSession(ctx, store.Session{ID: sesID, Project: project, AgentKind: kind, EnvironmentID: envID, CreatedAt: at}))
	in, err := json.Marshal(wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: name}}}})
	require.NoError(e.t, err)
	var out []store.Turn
	for i := range n {
		t := store.Turn{ID: fmt.Sprintf("turn-%s-%d", name, i), SessionID: sesID, Input: in, CreatedAt: at.Add(time.Duration(i) * time.Millisecond)}
		require.NoError(e.t, e.store.CreateTurn(ctx, t))
		out = append(out, t)
	}
	return out
}

// Issue 23 found the worker looking only at the 64 oldest due Turns: 64
// Turns nothing can run, or one Session's 64 queued Turns, kept another
// project's Turn queued on an idle device. Here 150 Sessions of a kind no
// device declares and one Session with 100 queued Turns come first; the
// other project's Turn still goes to its idle device, and the Turns found
// unmet are not planned again until a declaration changes.
func TestBacklogsNeverHideAnotherProjectsTurn(t *testing.T) {
	st := &sessionReadCounter{Store: memory.New()}
	e := newEnvStore(t, true, st)
	old := e.clock.Now().Add(-time.Hour)
	for i := range 150 {
		e.queueFor("p", "nobody", fmt.Sprintf("stuck-%03d", i), 1, old.Add(time.Duration(i)*time.Second))
	}
	e.queueFor("p", "nobody", "backlog", 100, old.Add(200*time.Second))
	q := e.queueFor("q", "codex", "other", 1, e.clock.Now())[0]

	dev := e.issue(store.KindDevice, "dev-q", "q")
	ws, _, err := e.dial("dev-q", dev)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ws.CloseNow() })
	r := &runtimeSide{t: t, ws: ws}
	yes := true
	r.send("", wire.Heartbeat{TS: 1, SupportedAgentKinds: []wire.SupportedAgentKind{{Kind: "codex", Available: &yes, Capabilities: wiretest.Capabilities()}}})

	prepID, prep := r.prepare()
	assert.Equal(t, "ses-other", prep.SessionID)
	s := r.start(prepID)
	r.send(s.RunID, wire.Done{})
	e.waitTurn(q.ID, store.TurnCompleted)

	// Every stuck Session's head was seen and says why it waits; the
	// backlog's later Turns were never candidates.
	require.NoError(t, e.gw.Settled(context.Background()))
	for _, id := range []string{"turn-stuck-000-0", "turn-stuck-149-0", "turn-backlog-0"} {
		w, ok := e.gw.Waiting(id)
		require.True(t, ok, id)
		assert.Equal(t, "no_device", w.Reason, id)
	}
	_, ok := e.gw.Waiting("turn-backlog-1")
	assert.False(t, ok, "a Session's later Turn is not a candidate while its oldest is queued")

	// Nothing changed: another pass plans none of them again.
	before := st.sessionReads.Load()
	require.NoError(t, e.gw.Settled(context.Background()))
	require.NoError(t, e.gw.Settled(context.Background()))
	assert.Equal(t, before, st.sessionReads.Load(), "Turns found unmet were planned again with nothing changed")

	// A device of p connects: the unmet Turns are planned again (their
	// reason changes from no_device to kind_not_declared).
	e.runtime("dev-p", wiretest.Capabilities())
	e.waitDeclared("dev-p", true)
	require.NoError(t, e.gw.Settled(context.Background()))
	assert.Greater(t, st.sessionReads.Load(), before)
	w, ok := e.gw.Waiting("turn-stuck-149-0")
	require.True(t, ok)
	assert.Equal(t, "kind_not_declared", w.Reason)
}
