package gateway_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// nextWrite reads Core's next frame, which must be a workspace_write.
func (r *runtimeSide) nextWrite() (string, wire.WorkspaceWrite) {
	r.ws.SetReadLimit(wire.MaxFrameBytes)
	m := r.next()
	require.Equal(r.t, wire.TypeWorkspaceWrite, m.Type)
	require.True(r.t, wire.IsCanonicalUUID(m.ID), "a mutation ID is a canonical UUID: %q", m.ID)
	return m.ID, m.Payload.(wire.WorkspaceWrite)
}

type writeEnd struct {
	res gateway.WriteResult
	err error
}

func (e *env) writeAsync(ses, path string, body []byte) <-chan writeEnd {
	out := make(chan writeEnd, 1)
	go func() {
		res, err := e.gw.WriteWorkspace(context.Background(), ses, path, body, gateway.WriteOptions{})
		out <- writeEnd{res, err}
	}()
	return out
}

// An ambiguous commit receipt (unknown write_unconfirmed) keeps the
// Session's mutation owner: the outcome is unknown to the caller and in
// the record, a successor write is refused naming it, a queued Turn is not
// claimed, and only an operator's resolution frees the Session. Nothing is
// resent.
func TestAnAmbiguousReceiptKeepsTheOwner(t *testing.T) {
	e := newEnv(t, true)
	ses := e.localSession("amb", "codex")
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)

	done := e.writeAsync(ses, "a.txt", []byte("hello"))
	id, begin := r.nextWrite()
	assert.Equal(t, wire.StepBegin, begin.Step)
	assert.Equal(t, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824", begin.SHA256, "the declared digest")
	w, err := e.store.GetWorkspaceWrite(context.Background(), id)
	require.NoError(t, err, "reserved before begin left")
	assert.Empty(t, w.Outcome)
	r.send(id, wire.WorkspaceWriteResult{Outcome: "ready"})
	_, chunk := r.nextWrite()
	assert.Equal(t, "hello", string(chunk.Data))
	r.send(id, wire.WorkspaceWriteResult{Outcome: "received", Offset: 5})
	_, commit := r.nextWrite()
	require.Equal(t, wire.StepCommit, commit.Step)
	w, err = e.store.GetWorkspaceWrite(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, "committing", w.State, "the commit attempt is stored before commit leaves")
	r.send(id, wire.WorkspaceWriteResult{Outcome: "unknown", ErrorCode: "write_unconfirmed"})
	end := <-done
	require.NoError(t, end.err)
	assert.Equal(t, "unknown", end.res.Outcome)
	assert.Equal(t, "write_unconfirmed", end.res.ErrorCode)
	w, err = e.store.GetWorkspaceWrite(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, store.WriteStateUnknown, w.State)
	assert.Empty(t, w.Outcome, "the owner stays held")

	_, err = e.gw.WriteWorkspace(context.Background(), ses, "b.txt", []byte("x"), gateway.WriteOptions{})
	var blocked *gateway.WriteBlockedError
	require.ErrorAs(t, err, &blocked)
	assert.Equal(t, id, blocked.MutationID)
	turn := e.queueTurnOn(ses, "after")
	got, err := e.store.GetTurn(context.Background(), turn.ID)
	require.NoError(t, err)
	assert.Equal(t, store.TurnQueued, got.State)

	_, err = e.gw.ResolveWrite(context.Background(), id, store.ResolutionApplied, "seen in the workspace")
	require.NoError(t, err)
	m := r.next()
	assert.Equal(t, wire.TypeExecutionPrepare, m.Type, "the Turn is claimed once resolved; the write is not resent")
}

// A connection lost before any commit attempt ends the write aborted and
// frees the Session: nothing can have reached the installer.
func TestALossBeforeCommitAbortsTheWrite(t *testing.T) {
	e := newEnv(t, true)
	ses := e.localSession("loss", "codex")
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	done := e.writeAsync(ses, "a.txt", make([]byte, 100<<10))
	id, _ := r.nextWrite()
	r.send(id, wire.WorkspaceWriteResult{Outcome: "ready"})
	_, chunk := r.nextWrite()
	require.Equal(t, wire.StepChunk, chunk.Step)
	require.NoError(t, r.ws.CloseNow())
	end := <-done
	require.NoError(t, end.err)
	assert.Equal(t, "aborted", end.res.Outcome)
	w, err := e.store.GetWorkspaceWrite(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, "aborted", w.Outcome, "released: no commit was attempted")
}

// Two Sessions of one registered Environment share its workspace: while a
// write of one is being sent, a Turn of the other stays queued (the
// Runtime would refuse its preparation with a code Core may not retry),
// and while that Turn holds the workspace a write is refused at once.
func TestAWriteAndTheTurnsOfItsWorkspaceStayApart(t *testing.T) {
	e := newEnv(t, true)
	writer := e.localSession("shared", "codex")
	ctx := context.Background()
	other := "ses-shared-2"
	require.NoError(t, e.store.CreateSession(ctx, store.Session{ID: other, Project: testProject, AgentKind: "codex", EnvironmentID: "env-shared", CreatedAt: e.clock.Now()}))
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)

	done := e.writeAsync(writer, "a.txt", []byte("hello"))
	id, _ := r.nextWrite()
	turn := e.queueTurnOn(other, "waits")
	r.send(id, wire.WorkspaceWriteResult{Outcome: "ready"})
	_, chunk := r.nextWrite()
	require.Equal(t, wire.StepChunk, chunk.Step, "the Turn's preparation did not come between")
	r.send(id, wire.WorkspaceWriteResult{Outcome: "received", Offset: 5})
	_, commit := r.nextWrite()
	require.Equal(t, wire.StepCommit, commit.Step)
	got, err := e.store.GetTurn(ctx, turn.ID)
	require.NoError(t, err)
	assert.Equal(t, store.TurnQueued, got.State, "held while the workspace is written")
	r.send(id, wire.WorkspaceWriteResult{Outcome: "completed", SizeBytes: 5})
	end := <-done
	require.NoError(t, end.err)
	assert.Equal(t, "completed", end.res.Outcome)

	m := r.next()
	require.Equal(t, wire.TypeExecutionPrepare, m.Type, "placed once the write settled")
	_, err = e.gw.WriteWorkspace(ctx, writer, "b.txt", []byte("x"), gateway.WriteOptions{})
	assert.ErrorIs(t, err, gateway.ErrSessionBusy, "a Turn of another Session holds the workspace")
}
