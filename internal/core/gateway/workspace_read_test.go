package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

const envUUID = "8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c"

// localSession stores a Session of kind on a self_hosted Environment
// bound to envUUID.
func (e *env) localSession(name, kind string) string {
	ctx := context.Background()
	now := e.clock.Now()
	envID, sesID := "env-"+name, "ses-"+name
	require.NoError(e.t, e.store.CreateEnvironment(ctx, store.Environment{ID: envID, Project: "p", Type: "self_hosted", Binding: json.RawMessage(`{"id":"` + envUUID + `"}`), DeviceID: e.hostDevice(), CreatedAt: now}))
	require.NoError(e.t, e.store.CreateSession(ctx, store.Session{ID: sesID, Project: "p", AgentKind: kind, EnvironmentID: envID, CreatedAt: now}))
	return sesID
}

func (e *env) queueTurnOn(sesID, text string) store.Turn {
	in, err := json.Marshal(wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: text}}}})
	require.NoError(e.t, err)
	t := store.Turn{ID: "turn-" + text, SessionID: sesID, Input: in, CreatedAt: e.clock.Now()}
	require.NoError(e.t, e.store.CreateTurn(context.Background(), t))
	e.gw.Kick() // the worker's poll runs on the manual clock
	return t
}

type readEnd struct {
	data gateway.ReadData
	err  error
}

// startRead runs ReadWorkspace in the background.
func (e *env) startRead(sesID string, q gateway.ReadQuery) <-chan readEnd {
	out := make(chan readEnd, 1)
	go func() {
		d, err := e.gw.ReadWorkspace(context.Background(), sesID, q)
		out <- readEnd{d, err}
	}()
	return out
}

func (e *env) readEnd(ch <-chan readEnd) readEnd {
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		e.t.Fatal("the read never returned")
	}
	return readEnd{}
}

func pending(ch <-chan readEnd) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

// readyReadOnly answers the read-only execution_prepare and returns it.
// Handles are connection-local and fresh for each preparation; the test
// uses the request ID as the handle.
func (r *runtimeSide) readyReadOnly() (string, wire.ExecutionPrepare) {
	m := r.next()
	require.Equal(r.t, wire.TypeExecutionPrepare, m.Type)
	p := m.Payload.(wire.ExecutionPrepare)
	r.send(m.ID, wire.PreparationStatus{Handle: "h-" + m.ID, Revision: 1, State: wire.PreparationPreparing})
	r.send(m.ID, wire.PreparationStatus{Handle: "h-" + m.ID, Revision: 2, State: wire.PreparationReady, ExpiresAt: 1_900_000_000_000})
	return m.ID, p
}

func (r *runtimeSide) nextRead() (string, wire.WorkspaceRead) {
	m := r.next()
	require.Equal(r.t, wire.TypeWorkspaceRead, m.Type)
	return m.ID, m.Payload.(wire.WorkspaceRead)
}

// release reads execution_release for the read-only handle and answers st.
func (r *runtimeSide) release(prepID string, st wire.PreparationStatus) {
	m := r.next()
	require.Equal(r.t, wire.TypeExecutionRelease, m.Type)
	require.Equal(r.t, prepID, m.ID)
	assert.Equal(r.t, "h-"+prepID, m.Payload.(wire.ExecutionRelease).Handle)
	st.Handle, st.Revision = "h-"+prepID, 3
	r.send(prepID, st)
}

func size(n int64) *int64 { return &n }

func TestIdleDirectoryReadRunsOnTheReadOnlyProfileAndReturnsAfterTheClose(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	ses := e.localSession("ls", "codex")
	out := e.startRead(ses, gateway.ReadQuery{Path: "", Directory: true, MaxEntries: 16})

	prepID, prep := r.readyReadOnly()
	require.NoError(t, prep.Validate(), "a valid read-only profile")
	assert.Equal(t, ses, prep.SessionID)
	cfg := prep.Configuration
	assert.True(t, cfg.WorkspaceReadOnly)
	assert.True(t, cfg.ReleaseOnCompletion)
	assert.True(t, cfg.StrictResume)
	require.NotNil(t, cfg.LocalEnvironment)
	assert.Equal(t, envUUID, cfg.LocalEnvironment.ID)
	assert.Nil(t, cfg.ExecutionControls, "no execution options")
	assert.False(t, cfg.ObserveToolObservations)
	assert.Nil(t, cfg.MCPHTTPServers, "no MCP")
	assert.Empty(t, cfg.AgentSessionID, "no native Session continuation")
	assert.Empty(t, cfg.Input, "no input")
	assert.Nil(t, cfg.AgentOptions, "no model or options")

	opID, rd := r.nextRead()
	assert.Equal(t, wire.WorkspaceRead{Handle: "h-" + prepID, EnvironmentID: envUUID, Operation: wire.ReadDirectory, Path: "", MaxEntries: 16}, rd)

	// The reservation holds the Session: a Turn queued now waits for it.
	turn := e.queueTurnOn(ses, "after")
	e.gw.Kick()
	no := false
	r.send(opID, wire.WorkspaceReadResult{Outcome: "completed", CloseAcknowledged: true, Directory: &wire.WorkspaceDirectory{
		Entries:   []wire.WorkspaceDirectoryEntry{{Name: "README.md", Kind: wire.EntryFile, SizeBytes: size(5)}, {Name: "src", Kind: wire.EntryDirectory}},
		Truncated: &no,
	}})
	// Next comes the release, not the Turn's preparation, and no data
	// before the close is confirmed.
	m := r.next()
	require.Equal(t, wire.TypeExecutionRelease, m.Type, "the Turn waits for the read's reservation")
	assert.True(t, pending(out), "no data before the confirmed close")
	r.send(prepID, wire.PreparationStatus{Handle: "h-" + prepID, Revision: 3, State: wire.PreparationReleased})

	end := e.readEnd(out)
	require.NoError(t, end.err)
	assert.Equal(t, "preparation", end.data.Target)
	assert.Equal(t, "dev-1", end.data.DeviceID)
	assert.False(t, end.data.Truncated)
	assert.Equal(t, []wire.WorkspaceDirectoryEntry{{Name: "README.md", Kind: wire.EntryFile, SizeBytes: size(5)}, {Name: "src", Kind: wire.EntryDirectory}}, end.data.Entries)

	// The reservation is gone: the Turn is placed now.
	tp, _ := r.prepare()
	r.start(tp)
	e.waitTurn(turn.ID, store.TurnRunning)
}

func TestIdleByteReadKeepsItsTruncation(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	ses := e.localSession("cat", "codex")
	out := e.startRead(ses, gateway.ReadQuery{Path: "notes/a.txt", MaxBytes: 4})
	prepID, _ := r.readyReadOnly()
	opID, rd := r.nextRead()
	assert.Equal(t, int64(4), rd.MaxBytes)
	assert.Zero(t, rd.MaxEntries, "byte and entry limits are exclusive")
	r.send(opID, wire.WorkspaceReadResult{Outcome: "completed", CloseAcknowledged: true, Data: []byte("abcd"), Truncated: true})
	r.release(prepID, wire.PreparationStatus{State: wire.PreparationReleased})
	end := e.readEnd(out)
	require.NoError(t, end.err)
	assert.Equal(t, []byte("abcd"), end.data.Data)
	assert.True(t, end.data.Truncated)
}

func readErr(t *testing.T, err error) *gateway.ReadError {
	var re *gateway.ReadError
	require.True(t, errors.As(err, &re), "%v", err)
	return re
}

func TestUnconfirmedCleanupReturnsUnavailableWithoutData(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	ses := e.localSession("dirty", "codex")
	out := e.startRead(ses, gateway.ReadQuery{Path: "f.txt", MaxBytes: 16})
	prepID, _ := r.readyReadOnly()
	opID, _ := r.nextRead()
	r.send(opID, wire.WorkspaceReadResult{Outcome: "completed", CloseAcknowledged: true, Data: []byte("secret")})
	r.release(prepID, wire.PreparationStatus{State: wire.PreparationFailed, ErrorCode: wire.PrepCodeCleanupUnconfirmed})
	end := e.readEnd(out)
	re := readErr(t, end.err)
	assert.Equal(t, gateway.ReadCleanupUnconfirmed, re.Code)
	assert.False(t, re.Rejected)
	assert.Empty(t, end.data.Data, "no data without a confirmed close")
}

func TestRejectedAndUnknownReadsReturnNoData(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	ses := e.localSession("missing", "codex")

	out := e.startRead(ses, gateway.ReadQuery{Path: "nope", MaxBytes: 16})
	prepID, _ := r.readyReadOnly()
	opID, _ := r.nextRead()
	r.send(opID, wire.WorkspaceReadResult{Outcome: "rejected", ErrorCode: "not_found"})
	r.release(prepID, wire.PreparationStatus{State: wire.PreparationReleased})
	re := readErr(t, e.readEnd(out).err)
	assert.Equal(t, "not_found", re.Code)
	assert.True(t, re.Rejected)

	out = e.startRead(ses, gateway.ReadQuery{Path: "x", MaxBytes: 16})
	prepID, _ = r.readyReadOnly()
	opID, _ = r.nextRead()
	r.send(opID, wire.WorkspaceReadResult{Outcome: "unknown", ErrorCode: "read_unconfirmed"})
	r.release(prepID, wire.PreparationStatus{State: wire.PreparationReleased})
	end := e.readEnd(out)
	assert.Equal(t, gateway.ReadUnknown, readErr(t, end.err).Code)
	assert.Nil(t, end.data.Data)

	// A result beyond the request's bound is never returned either.
	out = e.startRead(ses, gateway.ReadQuery{Path: "x", MaxBytes: 2})
	prepID, _ = r.readyReadOnly()
	opID, _ = r.nextRead()
	r.send(opID, wire.WorkspaceReadResult{Outcome: "completed", CloseAcknowledged: true, Data: []byte("toolong")})
	r.release(prepID, wire.PreparationStatus{State: wire.PreparationReleased})
	end = e.readEnd(out)
	assert.Equal(t, gateway.ReadUnknown, readErr(t, end.err).Code)
	assert.Nil(t, end.data.Data)
}

func TestIdleReadNeedsWorkspaceReadPreparation(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities(wiretest.Unsupports("workspace_read_preparation")))
	e.waitDeclared("dev-1", true)
	ses := e.localSession("nocap", "codex")
	end := e.readEnd(e.startRead(ses, gateway.ReadQuery{Path: "", Directory: true, MaxEntries: 8}))
	assert.Equal(t, gateway.ReadNoDevice, readErr(t, end.err).Code)

	// Nothing was sent: the first frame Core sends the hosting device's
	// next connection, which declares the capability, is another read's.
	r2 := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	out := e.startRead(ses, gateway.ReadQuery{Path: "", Directory: true, MaxEntries: 8})
	prepID, _ := r2.readyReadOnly()
	opID, _ := r2.nextRead()
	r2.send(opID, wire.WorkspaceReadResult{Outcome: "rejected", ErrorCode: "permission_denied"})
	r2.release(prepID, wire.PreparationStatus{State: wire.PreparationReleased})
	assert.Equal(t, "permission_denied", readErr(t, e.readEnd(out).err).Code)
	_ = r
}

func TestReadOfAnEnvironmentWithoutWorkspaceIsRefused(t *testing.T) {
	e := newEnv(t, true)
	turn := e.queueTurn("none")
	_, err := e.gw.ReadWorkspace(context.Background(), turn.SessionID, gateway.ReadQuery{Path: "", Directory: true, MaxEntries: 1})
	assert.ErrorIs(t, err, gateway.ErrNoWorkspace)
	ses := e.localSession("bad", "codex")
	_, err = e.gw.ReadWorkspace(context.Background(), ses, gateway.ReadQuery{Path: "a", MaxBytes: 1, MaxEntries: 1})
	re := readErr(t, err)
	assert.Equal(t, "invalid_request", re.Code, "byte and entry limits are exclusive")
}

func TestReadDuringExecutionTargetsTheRunAndFencesItWhenUnknown(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	ses := e.localSession("busy", "codex")
	turn := e.queueTurnOn(ses, "work")
	m := r.next()
	require.Equal(t, wire.TypeExecutionPrepare, m.Type)
	prepID := m.ID
	r.send(prepID, wire.PreparationStatus{ExecutorID: "ex-1", Handle: "h-1", Revision: 1, State: wire.PreparationPreparing})

	// Claimed, not yet running: there is no Run to read through.
	e.waitTurn(turn.ID, store.TurnClaimed)
	_, err := e.gw.ReadWorkspace(context.Background(), ses, gateway.ReadQuery{Path: "f", MaxBytes: 8})
	assert.ErrorIs(t, err, gateway.ErrSessionBusy)

	r.send(prepID, wire.PreparationStatus{ExecutorID: "ex-1", Handle: "h-1", Revision: 2, State: wire.PreparationReady, ExpiresAt: 1_900_000_000_000})
	s := r.start(prepID)
	e.waitTurn(turn.ID, store.TurnRunning)
	out := e.startRead(ses, gateway.ReadQuery{Path: "f", MaxBytes: 8})
	opID, rd := r.nextRead()
	assert.Equal(t, wire.WorkspaceRead{RunID: s.RunID, EnvironmentID: envUUID, Path: "f", MaxBytes: 8}, rd)
	r.send(opID, wire.WorkspaceReadResult{Outcome: "completed", CloseAcknowledged: true, Data: []byte("data")})
	end := e.readEnd(out)
	require.NoError(t, end.err)
	assert.Equal(t, "run", end.data.Target)
	assert.Equal(t, []byte("data"), end.data.Data)

	// A read that times out is unknown and fences the Run: the next read
	// on it is refused without a frame.
	out = e.startRead(ses, gateway.ReadQuery{Path: "g", MaxBytes: 8})
	_, _ = r.nextRead()
	require.Eventually(t, func() bool {
		e.clock.Advance(time.Second)
		return len(out) > 0
	}, 10*time.Second, time.Millisecond)
	assert.Equal(t, gateway.ReadUnknown, readErr(t, e.readEnd(out).err).Code)
	_, err = e.gw.ReadWorkspace(context.Background(), ses, gateway.ReadQuery{Path: "h", MaxBytes: 8})
	assert.Equal(t, gateway.ReadUnknown, readErr(t, err).Code)

	// The Run itself goes on; its done is the next thing on the wire.
	r.send(s.RunID, wire.Done{})
	e.waitTurn(turn.ID, store.TurnCompleted)
}

func TestLostConnectionMidReadIsUnknownAndNeverReplayed(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	ses := e.localSession("lost", "codex")
	out := e.startRead(ses, gateway.ReadQuery{Path: "f", MaxBytes: 8})
	_, _ = r.readyReadOnly()
	_, _ = r.nextRead()
	require.NoError(t, r.ws.Close(websocket.StatusGoingAway, "gone"))
	end := e.readEnd(out)
	require.Error(t, end.err)
	assert.Nil(t, end.data.Data)
	code := readErr(t, end.err).Code
	assert.Contains(t, []string{gateway.ReadUnknown, gateway.ReadCleanupUnconfirmed}, code)

	// The device reconnects: nothing of the read is replayed; the first
	// frame Core sends is the preparation of a new Turn.
	r2 := e.runtime("dev-1", wiretest.Capabilities())
	e.queueTurnOn(ses, "next")
	e.gw.Kick()
	m := r2.next()
	assert.Equal(t, wire.TypeExecutionPrepare, m.Type)
	assert.False(t, m.Payload.(wire.ExecutionPrepare).Configuration.WorkspaceReadOnly)
}

func TestADuplicatePendingOperationIDStartsNoRead(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	ses := e.localSession("dup", "codex")
	out := e.startRead(ses, gateway.ReadQuery{Path: "f", MaxBytes: 8})
	prepID, _ := r.readyReadOnly()
	opID, rd := r.nextRead()
	err := e.gw.SendRaw(context.Background(), "dev-1", opID, rd)
	var se *peer.SendError
	require.True(t, errors.As(err, &se), "the same operation ID is refused before it leaves: %v", err)
	r.send(opID, wire.WorkspaceReadResult{Outcome: "completed", CloseAcknowledged: true, Data: []byte("x")})
	// The next frame is the release: the duplicate never left.
	r.release(prepID, wire.PreparationStatus{State: wire.PreparationReleased})
	end := e.readEnd(out)
	require.NoError(t, end.err)
	assert.Equal(t, []byte("x"), end.data.Data)
	// A settled operation ID is never read again either.
	err = e.gw.SendRaw(context.Background(), "dev-1", opID, rd)
	require.True(t, errors.As(err, &se), "%v", err)
}

func TestACallerThatGivesUpLeavesTheReservationHeldUntilTheRelease(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	ses := e.localSession("gone", "codex")
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan error, 1)
	go func() {
		_, err := e.gw.ReadWorkspace(ctx, ses, gateway.ReadQuery{Path: "f", MaxBytes: 8})
		out <- err
	}()
	prepID, _ := r.readyReadOnly()
	opID, _ := r.nextRead()
	cancel()
	select {
	case err := <-out:
		assert.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("the caller was not released")
	}
	turn := e.queueTurnOn(ses, "waits")
	e.gw.Kick()
	r.send(opID, wire.WorkspaceReadResult{Outcome: "completed", CloseAcknowledged: true, Data: []byte("x")})
	// The read runs on: its release comes before the Turn's preparation.
	r.release(prepID, wire.PreparationStatus{State: wire.PreparationReleased})
	tp, p := r.prepare()
	assert.False(t, p.Configuration.WorkspaceReadOnly)
	r.start(tp)
	e.waitTurn(turn.ID, store.TurnRunning)
}

func TestARefusedReadOnlyPreparationReadsNothing(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	ses := e.localSession("full", "codex")
	out := e.startRead(ses, gateway.ReadQuery{Path: "", Directory: true, MaxEntries: 4})
	m := r.next()
	require.Equal(t, wire.TypeExecutionPrepare, m.Type)
	r.send(m.ID, wire.PreparationStatus{State: wire.PreparationRejected, Operation: wire.PreparationOpPrepare, ErrorCode: wire.PrepCodePreparationCapacity})
	end := e.readEnd(out)
	re := readErr(t, end.err)
	assert.Equal(t, gateway.ReadPreparationFailed, re.Code)
	assert.Contains(t, re.Detail, wire.PrepCodePreparationCapacity)
	// Not retried, and the reservation is free: the next frame is a Turn's.
	turn := e.queueTurnOn(ses, "next")
	e.gw.Kick()
	tp, p := r.prepare()
	assert.False(t, p.Configuration.WorkspaceReadOnly)
	r.start(tp)
	e.waitTurn(turn.ID, store.TurnRunning)
}
