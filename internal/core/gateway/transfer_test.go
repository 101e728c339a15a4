package gateway_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/envinit"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// initSession stores a Session of kind on a self_hosted Environment bound
// to envUUID that declares spec as its initialization.
func (e *env) initSession(name, kind string, spec envinit.Spec) string {
	ctx := context.Background()
	raw, err := json.Marshal(spec)
	require.NoError(e.t, err)
	envID, sesID := "env-"+name, "ses-"+name
	require.NoError(e.t, e.store.CreateEnvironment(ctx, store.Environment{ID: envID, Project: "p", Type: "self_hosted",
		Binding: json.RawMessage(`{"id":"` + envUUID + `"}`), Initialization: raw, DeviceID: e.hostDevice(), CreatedAt: e.clock.Now()}))
	require.NoError(e.t, e.store.CreateSession(ctx, store.Session{ID: sesID, Project: "p", AgentKind: kind, EnvironmentID: envID, CreatedAt: e.clock.Now()}))
	return sesID
}

// nextPrepare reads Core's next frame, which must be a runtime_prepare.
func (r *runtimeSide) nextPrepare() (string, wire.RuntimePrepare) {
	r.ws.SetReadLimit(wire.MaxFrameBytes)
	m := r.next()
	require.Equal(r.t, wire.TypeRuntimePrepare, m.Type)
	require.True(r.t, wire.IsCanonicalUUID(m.ID), "a transfer ID is a canonical UUID: %q", m.ID)
	return m.ID, m.Payload.(wire.RuntimePrepare)
}

// acceptTransfer answers one whole transfer (ready, each chunk at its
// offset, completed) and returns the bytes Core sent.
func (r *runtimeSide) acceptTransfer(id string, begin wire.RuntimePrepare) []byte {
	r.send(id, wire.RuntimePrepareResult{Outcome: "ready"})
	var body []byte
	for {
		mid, p := r.nextPrepare()
		require.Equal(r.t, id, mid, "one transfer at a time")
		if p.Step == wire.StepCommit {
			res := wire.RuntimePrepareResult{Outcome: "completed"}
			if begin.SizeBytes != nil {
				res.SizeBytes = *begin.SizeBytes
			}
			r.send(id, res)
			return body
		}
		require.Equal(r.t, wire.StepChunk, p.Step)
		require.EqualValues(r.t, len(body), p.Offset, "chunks in order, at the offset received so far")
		body = append(body, p.Data...)
		r.send(id, wire.RuntimePrepareResult{Outcome: "received", Offset: int64(len(body))})
	}
}

func (e *env) initStatus(envID string) store.Initialization {
	var st store.Initialization
	require.Eventually(e.t, func() bool {
		var err error
		st, err = e.store.GetInitialization(context.Background(), envID)
		return err == nil
	}, 10*time.Second, time.Millisecond)
	return st
}

func TestInitializationIsSentStepByStepBeforeThePreparation(t *testing.T) {
	e := newEnv(t, true)
	big := bytes.Repeat([]byte("0123456789abcdef"), 6400) // 100 KiB: two chunks
	ses := e.initSession("init", "codex", envinit.Spec{Env: map[string]string{"MODE": "test"}, Files: []envinit.File{{Path: "/workspace/data/big.bin", Content: big}}})
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	turn := e.queueTurnOn(ses, "go")

	// The configure step: a typed header, then commit.
	id, begin := r.nextPrepare()
	assert.Equal(t, wire.StepBegin, begin.Step)
	assert.Equal(t, envUUID, begin.EnvironmentID)
	assert.Equal(t, envinit.SessionUUID(ses), begin.SessionID)
	require.NotNil(t, begin.Initialization)
	assert.Equal(t, map[string]string{"MODE": "test"}, begin.Initialization.Env)
	assert.Empty(t, r.acceptTransfer(id, begin))

	// The file: begin with size and digest, then ordered chunks each waiting
	// for its received offset. A receipt naming another offset confirms
	// nothing: Core waits on.
	fid, fbegin := r.nextPrepare()
	assert.NotEqual(t, id, fid, "each step is its own transfer")
	require.NotNil(t, fbegin.File)
	assert.Equal(t, "/workspace/data/big.bin", fbegin.File.Path)
	require.NotNil(t, fbegin.SizeBytes)
	assert.EqualValues(t, len(big), *fbegin.SizeBytes)
	sum := sha256.Sum256(big)
	assert.Equal(t, hex.EncodeToString(sum[:]), fbegin.SHA256)
	r.send(fid, wire.RuntimePrepareResult{Outcome: "ready"})
	_, c1 := r.nextPrepare()
	assert.EqualValues(t, 0, c1.Offset)
	assert.Len(t, c1.Data, wire.ChunkBytes)
	r.send(fid, wire.RuntimePrepareResult{Outcome: "received", Offset: 1})
	require.Eventually(t, func() bool {
		return strings.Contains(e.logs.String(), `"type":"runtime_prepare_result"`) && strings.Contains(e.logs.String(), "frame refused")
	}, 10*time.Second, time.Millisecond, "the wrong offset is refused")
	r.send(fid, wire.RuntimePrepareResult{Outcome: "received", Offset: wire.ChunkBytes})
	_, c2 := r.nextPrepare()
	assert.EqualValues(t, wire.ChunkBytes, c2.Offset)
	got := append(append([]byte{}, c1.Data...), c2.Data...)
	r.send(fid, wire.RuntimePrepareResult{Outcome: "received", Offset: int64(len(got))})
	_, commit := r.nextPrepare()
	assert.Equal(t, wire.StepCommit, commit.Step)
	assert.Equal(t, big, got)
	r.send(fid, wire.RuntimePrepareResult{Outcome: "completed", SizeBytes: *fbegin.SizeBytes})

	// Only now the Turn's own preparation.
	prepID, _ := r.prepare()
	s := r.start(prepID)
	r.send(s.RunID, wire.Done{})
	e.waitTurn(turn.ID, store.TurnCompleted)
	st := e.initStatus("env-init")
	assert.Equal(t, "completed", st.Outcome)
	assert.Equal(t, "dev-1", st.DeviceID)

	// A second Turn on the same connection finds the Environment initialized.
	turn2 := e.queueTurnOn(ses, "again")
	prepID, _ = r.prepare()
	s = r.start(prepID)
	r.send(s.RunID, wire.Done{})
	e.waitTurn(turn2.ID, store.TurnCompleted)

	// A new connection of the device initializes afresh (a new transfer, not
	// a replay of the first one) before its first work for the Session.
	r2 := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	turn3 := e.queueTurnOn(ses, "fresh")
	id3, begin3 := r2.nextPrepare()
	assert.NotEqual(t, id, id3)
	require.NotNil(t, begin3.Initialization)
	r2.acceptTransfer(id3, begin3)
	id4, begin4 := r2.nextPrepare()
	assert.Equal(t, big, r2.acceptTransfer(id4, begin4))
	prepID, _ = r2.prepare()
	s = r2.start(prepID)
	r2.send(s.RunID, wire.Done{})
	e.waitTurn(turn3.ID, store.TurnCompleted)
}

func TestInitializationRejectedFailsTheTurnWithItsCode(t *testing.T) {
	e := newEnv(t, true)
	ses := e.initSession("bad", "codex", envinit.Spec{Files: []envinit.File{{Path: "/workspace/a.txt", Content: []byte("a")}}})
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	turn := e.queueTurnOn(ses, "one")
	id, _ := r.nextPrepare()
	r.send(id, wire.RuntimePrepareResult{Outcome: "rejected", ErrorCode: "runtime_preparation_rejected"})
	got := e.waitTurn(turn.ID, store.TurnFailed)
	assert.Equal(t, gateway.ReasonInitializationFailed, got.Outcome.Reason)
	assert.JSONEq(t, `{"initialization":"rejected","step":"/workspace/a.txt","initialization_error":"runtime_preparation_rejected"}`, string(got.Outcome.Evidence))
	st := e.initStatus("env-bad")
	assert.Equal(t, "rejected", st.Outcome)
	assert.Equal(t, "runtime_preparation_rejected", st.ErrorCode)
	assert.Equal(t, "/workspace/a.txt", st.Step)

	// On this connection the Environment's work now fails at once: nothing
	// is sent again. A Session without initialization still runs.
	turn2 := e.queueTurnOn(ses, "two")
	e.waitTurn(turn2.ID, store.TurnFailed)
	plain := e.queueTurn("plain")
	e.gw.Kick()
	prepID, _ := r.prepare() // the next frame is this Turn's, not a runtime_prepare
	s := r.start(prepID)
	r.send(s.RunID, wire.Done{})
	e.waitTurn(plain.ID, store.TurnCompleted)
}

func TestInitializationRefusedForNowLeavesTheTurnQueued(t *testing.T) {
	e := newEnv(t, true)
	ses := e.initSession("busy", "codex", envinit.Spec{Env: map[string]string{"A": "1"}, Files: []envinit.File{{Path: "/workspace/f", Content: []byte("f")}}})
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	turn := e.queueTurnOn(ses, "later")
	cid, cbegin := r.nextPrepare()
	r.acceptTransfer(cid, cbegin)
	id, _ := r.nextPrepare()
	r.send(id, wire.RuntimePrepareResult{Outcome: "rejected", ErrorCode: "resource_unavailable"})
	var queued store.Turn
	require.Eventually(t, func() bool {
		var err error
		queued, err = e.store.GetTurn(context.Background(), turn.ID)
		return err == nil && queued.State == store.TurnQueued && queued.Attempts == 1
	}, 10*time.Second, time.Millisecond)
	assert.True(t, queued.NotBefore.After(e.clock.Now()), "due again only after the backoff")
	assert.Equal(t, "rejected", e.initStatus("env-busy").Outcome)

	// After the backoff a new transfer runs (the refused one applied
	// nothing); the configure step that completed is not sent again.
	e.clock.Advance(2 * time.Second) // the first backoff is 1 s
	e.gw.Kick()
	id2, begin := r.nextPrepare()
	assert.NotEqual(t, id, id2)
	require.NotNil(t, begin.File, "the step that was refused, not the completed one")
	r.acceptTransfer(id2, begin)
	prepID, _ := r.prepare()
	s := r.start(prepID)
	r.send(s.RunID, wire.Done{})
	e.waitTurn(turn.ID, store.TurnCompleted)
	assert.Equal(t, "completed", e.initStatus("env-busy").Outcome)
}

func TestInitializationLostAfterCommitIsUnknownAndNotReplayed(t *testing.T) {
	e := newEnv(t, true)
	ses := e.initSession("lost", "codex", envinit.Spec{Env: map[string]string{"A": "1"}})
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	turn := e.queueTurnOn(ses, "x")
	id, _ := r.nextPrepare()
	r.send(id, wire.RuntimePrepareResult{Outcome: "ready"})
	_, commit := r.nextPrepare()
	require.Equal(t, wire.StepCommit, commit.Step)
	require.NoError(t, r.ws.CloseNow())

	got := e.waitTurn(turn.ID, store.TurnFailed)
	assert.Equal(t, gateway.ReasonInitializationFailed, got.Outcome.Reason)
	assert.Equal(t, "unknown", e.initStatus("env-lost").Outcome, "a commit whose result was lost is unknown, never completed or failed")
}
