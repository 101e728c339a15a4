package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

func (e *env) attempt(id string) store.Suspension {
	a, err := e.store.GetSuspension(context.Background(), id)
	require.NoError(e.t, err)
	return a
}

func TestSuspendAndResumeThroughTheRealRuntime(t *testing.T) {
	e := newEnv(t, true)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644))
	e.realRuntime("dev-rt", dir)
	ses := e.localSession("sus", script.Kind)
	ctx := context.Background()

	a, err := e.gw.SuspendEnvironment(ctx, "env-sus", true)
	require.NoError(t, err)
	assert.Equal(t, "suspended", a.State)
	assert.False(t, a.Settled)
	assert.Equal(t, "dev-rt", a.DeviceID)
	assert.True(t, wire.IsCanonicalUUID(a.ID))
	_, err = e.gw.SuspendEnvironment(ctx, "env-sus", true)
	assert.ErrorIs(t, err, gateway.ErrSuspensionOpen, "one unsettled attempt per Environment")

	// Suspended: Core places no read of the Environment (the Runtime would
	// refuse its admission), and the attempt stays as it is.
	_, err = e.gw.ReadWorkspace(ctx, ses, gateway.ReadQuery{Path: "a.txt", MaxBytes: 8})
	assert.Equal(t, gateway.ReadSuspended, readErr(t, err).Code)
	assert.Equal(t, "suspended", e.attempt(a.ID).State)

	// A Turn queued meanwhile is not placed while the attempt is open.
	turn := e.queueTurnOn(ses, "held")
	e.gw.Kick()
	got, err := e.store.GetTurn(ctx, turn.ID)
	require.NoError(t, err)
	assert.Equal(t, store.TurnQueued, got.State)

	r, err := e.gw.ResumeEnvironment(ctx, "env-sus", false, true)
	require.NoError(t, err)
	assert.Equal(t, "resumed", r.State)
	assert.True(t, r.Settled)
	_, err = e.gw.ResumeEnvironment(ctx, "env-sus", false, true)
	assert.ErrorIs(t, err, gateway.ErrNotSuspended)

	e.gw.Kick()
	e.waitTurn(turn.ID, store.TurnCompleted)
	var cat gateway.ReadData
	// The finished Turn's worker drops the Session's reservation just after
	// the Turn's record settles.
	require.Eventually(t, func() bool {
		cat, err = e.gw.ReadWorkspace(ctx, ses, gateway.ReadQuery{Path: "a.txt", MaxBytes: 8})
		return !errors.Is(err, gateway.ErrSessionBusy)
	}, 10*time.Second, time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, "a", string(cat.Data))
}

// quiesced reads the next environment_quiesce.
func (r *runtimeSide) quiesce() (string, wire.EnvironmentQuiesce) {
	m := r.next()
	require.Equal(r.t, wire.TypeEnvironmentQuiesce, m.Type)
	return m.ID, m.Payload.(wire.EnvironmentQuiesce)
}

func (r *runtimeSide) resume() (string, wire.EnvironmentResume) {
	m := r.next()
	require.Equal(r.t, wire.TypeEnvironmentResume, m.Type)
	return m.ID, m.Payload.(wire.EnvironmentResume)
}

type suspendEnd struct {
	a   store.Suspension
	err error
}

func (e *env) startSuspend(envID string) <-chan suspendEnd {
	out := make(chan suspendEnd, 1)
	go func() {
		a, err := e.gw.SuspendEnvironment(context.Background(), envID, true)
		out <- suspendEnd{a, err}
	}()
	return out
}

func (e *env) startResume(envID string, rollback bool) <-chan suspendEnd {
	out := make(chan suspendEnd, 1)
	go func() {
		a, err := e.gw.ResumeEnvironment(context.Background(), envID, rollback, true)
		out <- suspendEnd{a, err}
	}()
	return out
}

func waitEnd(t *testing.T, ch <-chan suspendEnd) suspendEnd {
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("the suspension call never returned")
	}
	return suspendEnd{}
}

// Replies are fenced by the identity they echo: a reply for another
// suspend_id, one naming another Environment, and a resume answer nobody
// asked for change nothing; only the attempt's own answer settles it.
func TestStaleSuspensionRepliesNeverMoveTheAttempt(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	e.localSession("fence", "codex")
	yes, no := true, false

	out := e.startSuspend("env-fence")
	qid, q := r.quiesce()
	assert.Equal(t, envUUID, q.EnvironmentID)
	r.send(qid, wire.EnvironmentQuiesced{EnvironmentID: envUUID, SuspendID: q.SuspendID, Accepted: &yes})
	a := waitEnd(t, out)
	require.NoError(t, a.err)
	require.Equal(t, "suspended", a.a.State)

	refusals := func() int { return strings.Count(e.logs.String(), "frame refused") }
	before := refusals()
	// A resume answer with no resume sent, and one for an attempt that does
	// not exist: refused, nothing moves.
	r.send(qid, wire.EnvironmentResumed{EnvironmentID: envUUID, SuspendID: q.SuspendID, Accepted: &yes})
	r.send("other", wire.EnvironmentResumed{EnvironmentID: envUUID, SuspendID: "stale-attempt", Accepted: &yes})
	require.Eventually(t, func() bool { return refusals() >= before+2 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, "suspended", e.attempt(q.SuspendID).State)

	res := e.startResume("env-fence", false)
	rid, rp := r.resume()
	assert.Equal(t, q.SuspendID, rp.SuspendID)
	assert.False(t, rp.Rollback)
	before = refusals()
	// The right suspend_id for another Environment: the guard refuses it.
	r.send(rid, wire.EnvironmentResumed{EnvironmentID: "00000000-0000-4000-8000-000000000009", SuspendID: q.SuspendID, Accepted: &yes})
	require.Eventually(t, func() bool { return refusals() > before }, 10*time.Second, time.Millisecond)
	assert.Equal(t, "resuming", e.attempt(q.SuspendID).State)
	r.send(rid, wire.EnvironmentResumed{EnvironmentID: envUUID, SuspendID: q.SuspendID, Accepted: &no, ErrorCode: "not_suspended"})
	end := waitEnd(t, res)
	require.NoError(t, end.err)
	assert.Equal(t, "resume_refused", end.a.State)
	assert.Equal(t, "not_suspended", end.a.ErrorCode)
	assert.True(t, end.a.Settled)
}

func TestRefusedQuiesceKeepsItsCode(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	e.localSession("busy", "codex")
	no := false
	out := e.startSuspend("env-busy")
	qid, q := r.quiesce()
	r.send(qid, wire.EnvironmentQuiesced{EnvironmentID: envUUID, SuspendID: q.SuspendID, Accepted: &no, ErrorCode: "resource_busy"})
	a := waitEnd(t, out)
	require.NoError(t, a.err)
	assert.Equal(t, "quiesce_refused", a.a.State)
	assert.Equal(t, "resource_busy", a.a.ErrorCode)
	assert.True(t, a.a.Settled)
	// Settled: a new attempt may start, with a new suspend_id.
	out = e.startSuspend("env-busy")
	_, q2 := r.quiesce()
	assert.NotEqual(t, q.SuspendID, q2.SuspendID)
	require.NoError(t, r.ws.CloseNow())
	a = waitEnd(t, out)
	require.NoError(t, a.err)
	assert.Equal(t, "uncertain", e.attempt(q2.SuspendID).State, "a lost answer leaves the attempt uncertain, fenced until a resume")
}

// swapHandler lets a test restart Core behind the same URL.
type swapHandler struct{ h atomic.Pointer[http.ServeMux] }

func (s *swapHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.h.Load().ServeHTTP(w, r) }

// A suspension outlives the Core that started it: after a restart on the
// same store, the resume of the attempt on the Runtime's new connection
// restores the attempt from the store and resumes exactly that attempt.
// An attempt the old Core left with its quiesce unanswered restarts from
// uncertain, as the table's connection_lost step says.
func TestResumeAfterCoreRestart(t *testing.T) {
	st := memory.New()
	clock := peer.SystemClock()
	issuer := credential.Issuer{Store: st, Now: clock.Now}
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	sw := &swapHandler{}
	srv := httptest.NewServer(sw)
	defer srv.Close()
	start := func() *gateway.Gateway {
		gw := gateway.New(gateway.Config{Store: st, Credentials: issuer, PublicURL: srv.URL, Clock: clock, Logger: log})
		mux := http.NewServeMux()
		gw.Register(mux)
		sw.h.Store(mux)
		return gw
	}
	gw := start()
	ctx := context.Background()
	require.NoError(t, st.CreateEnvironment(ctx, store.Environment{ID: "env-r", Project: "p", Type: "self_hosted", Binding: json.RawMessage(`{"id":"` + envUUID + `"}`), DeviceID: "dev-rt", CreatedAt: time.Now()}))
	_, secret, err := issuer.Issue(ctx, store.KindDevice, "dev-rt", "p")
	require.NoError(t, err)
	bindings := daemon.NewBindings()
	require.NoError(t, bindings.Add(envUUID, t.TempDir()))
	defer bindings.Close()
	reg := harness.NewRegistry()
	require.NoError(t, reg.Register(script.New(script.Script{})))
	dctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- daemon.Run(dctx, daemon.Config{CoreURL: srv.URL, DeviceID: "dev-rt", Credential: daemon.NewCredential(secret.Reveal()), Registry: reg,
			Logger: log, Environments: bindings, MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond})
	}()
	defer func() { cancel(); <-done }()
	connected := func(g *gateway.Gateway) {
		require.Eventually(t, func() bool { _, ok := g.Snapshot("dev-rt"); return ok }, 10*time.Second, time.Millisecond)
	}
	connected(gw)

	a, err := gw.SuspendEnvironment(ctx, "env-r", true)
	require.NoError(t, err)
	require.Equal(t, "suspended", a.State)
	gw.Close() // Core stops

	gw = start()
	defer func() { gw.Close() }()
	connected(gw)
	_, err = gw.SuspendEnvironment(ctx, "env-r", true)
	assert.ErrorIs(t, err, gateway.ErrSuspensionOpen, "the attempt is still open after the restart")
	r, err := gw.ResumeEnvironment(ctx, "env-r", false, true)
	require.NoError(t, err)
	assert.Equal(t, a.ID, r.ID)
	assert.Equal(t, "resumed", r.State, "the Runtime's fence names the same attempt")

	// An attempt left quiescing by a Core that died mid-request: the resume
	// restarts it from uncertain and the Runtime (which holds no fence for
	// it) refuses not_suspended; nothing else is resumed.
	require.NoError(t, st.CreateSuspension(ctx, store.Suspension{ID: "4b7c1f0e-2a3d-4e5f-8a6b-7c8d9e0f1a2b", EnvironmentID: "env-r", DeviceID: "dev-rt", State: "quiescing", CreatedAt: time.Now()}))
	r, err = gw.ResumeEnvironment(ctx, "env-r", false, true)
	require.NoError(t, err)
	assert.Equal(t, "resume_refused", r.State)
	assert.Equal(t, "not_suspended", r.ErrorCode)
	assert.Contains(t, logs.String(), `"stored":"quiescing","restored":"uncertain"`, "restored through the table's connection_lost step")
}

// An admission granted and released on the device while an attempt holds
// one of its Environments neither resumes nor settles the attempt, and
// Core sends no suspension frame for it: the next suspension frame is the
// resume the API asked for (daemon-protocol.txt:7). (The read is of
// another Environment of the device: none of the held one is placed.)
func TestReleasingAnAdmissionLeavesTheSuspensionAlone(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	e.localSession("keep", "codex")
	ses := e.sessionOn("beside", "codex", otherUUID)
	yes := true
	out := e.startSuspend("env-keep")
	qid, q := r.quiesce()
	r.send(qid, wire.EnvironmentQuiesced{EnvironmentID: envUUID, SuspendID: q.SuspendID, Accepted: &yes})
	require.Equal(t, "suspended", waitEnd(t, out).a.State)

	read := e.startRead(ses, gateway.ReadQuery{Path: "a.txt", MaxBytes: 8})
	prepID, _ := r.readyReadOnly()
	opID, _ := r.nextRead()
	r.send(opID, wire.WorkspaceReadResult{Outcome: "completed", CloseAcknowledged: true, Data: []byte("a")})
	r.release(prepID, wire.PreparationStatus{State: wire.PreparationReleased})
	got := e.readEnd(read)
	require.NoError(t, got.err)
	assert.Equal(t, "a", string(got.data.Data))
	assert.Equal(t, "suspended", e.attempt(q.SuspendID).State)

	res := e.startResume("env-keep", false)
	rid, rp := r.resume() // the next frame Core sends
	assert.Equal(t, q.SuspendID, rp.SuspendID)
	r.send(rid, wire.EnvironmentResumed{EnvironmentID: envUUID, SuspendID: q.SuspendID, Accepted: &yes})
	assert.Equal(t, "resumed", waitEnd(t, res).a.State)
}

// otherUUID is a second Environment binding on the same device.
const otherUUID = "5e6f7a8b-9c0d-4e1f-8a2b-3c4d5e6f7a8b"

// sessionOn registers an Environment with binding on the host device and a
// Session of kind on it, as localSession does for envUUID.
func (e *env) sessionOn(name, kind, binding string) string {
	ctx := context.Background()
	now := e.clock.Now()
	envID, sesID := "env-"+name, "ses-"+name
	require.NoError(e.t, e.store.CreateEnvironment(ctx, store.Environment{ID: envID, Project: testProject, Type: "self_hosted",
		Binding: json.RawMessage(`{"id":"` + binding + `"}`), DeviceID: e.hostDevice(), CreatedAt: now}))
	require.NoError(e.t, e.store.CreateSession(ctx, store.Session{ID: sesID, Project: testProject, AgentKind: kind, EnvironmentID: envID, CreatedAt: now}))
	return sesID
}

// sync waits until the device's connection applied what it read.
func (e *env) sync(device string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, ok := e.gw.Sync(ctx, device)
	require.True(e.t, ok, "device %s has no connection", device)
}

// heartbeat sends another valid declaration from the device and waits
// until Core's connection applied it, so that a test moving the clock
// keeps the connection inside Core's read deadline.
func (e *env) heartbeat(r *runtimeSide, device string) {
	yes := true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	before, ok := e.gw.Sync(ctx, device)
	require.True(e.t, ok, "device %s has no connection", device)
	r.send("", wire.Heartbeat{TS: 2, SupportedAgentKinds: []wire.SupportedAgentKind{{Kind: "codex", Available: &yes, Capabilities: wiretest.Capabilities()}}})
	require.Eventually(e.t, func() bool {
		n, ok := e.gw.Sync(ctx, device)
		return ok && n > before
	}, 10*time.Second, time.Millisecond)
}

func (e *env) turnState(id string) store.TurnState {
	got, err := e.store.GetTurn(context.Background(), id)
	require.NoError(e.t, err)
	return got.State
}

// An attempt that gets no answer is bounded: after answer_wait Core rolls
// the unanswered quiesce back, and when the rollback goes unanswered too
// the attempt is expired with answer_timeout and the Environment released:
// the Turn the attempt held is placed then. The attempt stays open for the
// rollback's late answer, which settles it with the timeout kept beside.
func TestUnansweredQuiesceRollsBackThenExpires(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	ses := e.localSession("mute", "codex")
	ctx := context.Background()

	a, err := e.gw.SuspendEnvironment(ctx, "env-mute", false)
	require.NoError(t, err)
	require.Equal(t, "quiescing", a.State)
	_, q := r.quiesce()
	turn := e.queueTurnOn(ses, "held")

	// 30 s without an answer: the rollback, with the attempt's identity.
	e.clock.Advance(29 * time.Second)
	e.heartbeat(r, "dev-1")
	assert.Equal(t, "quiescing", e.attempt(a.ID).State, "still within answer_wait")
	e.clock.Advance(time.Second)
	rid, rb := r.resume()
	assert.True(t, rb.Rollback)
	assert.Equal(t, q.SuspendID, rb.SuspendID)
	assert.Equal(t, envUUID, rb.EnvironmentID)
	e.sync("dev-1")
	assert.Equal(t, "resuming", e.attempt(a.ID).State)
	assert.Equal(t, store.TurnQueued, e.turnState(turn.ID), "the attempt is still open")

	// The rollback goes unanswered for another 30 s: expired, and the
	// held Turn is placed on the device at once.
	e.heartbeat(r, "dev-1")
	e.clock.Advance(30 * time.Second)
	_, prep := r.prepare()
	assert.Equal(t, ses, prep.SessionID)
	end := e.attempt(a.ID)
	assert.Equal(t, "expired", end.State)
	assert.False(t, end.Settled, "released, not settled: the rollback may still be read")
	assert.Equal(t, gateway.CodeAnswerTimeout, end.ErrorCode)
	assert.Equal(t, e.clock.Now().UTC(), end.UpdatedAt.UTC(), "expired at the bound")
	assert.Contains(t, e.logs.String(), "expired: no answer within answer_wait")
	_, err = e.gw.SuspendEnvironment(ctx, "env-mute", false)
	assert.ErrorIs(t, err, gateway.ErrSuspensionOpen, "a new attempt waits until this one is settled")

	yes := true
	r.send(rid, wire.EnvironmentResumed{EnvironmentID: envUUID, SuspendID: q.SuspendID, Accepted: &yes})
	require.Eventually(t, func() bool { return e.attempt(a.ID).Settled }, 10*time.Second, time.Millisecond)
	end = e.attempt(a.ID)
	assert.Equal(t, "resumed", end.State, "the late answer is proof")
	assert.Equal(t, gateway.CodeAnswerTimeout, end.ErrorCode, "the timeout stays recorded beside it")
}

// An expired attempt whose connection is then lost may still hold the
// Runtime's fence (its rollback unread), so it is uncertain again and the
// device's next connection rolls it back again.
func TestExpiredAttemptIsRolledBackAgainAfterALoss(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	e.localSession("again", "codex")
	ctx := context.Background()

	a, err := e.gw.SuspendEnvironment(ctx, "env-again", false)
	require.NoError(t, err)
	_, q := r.quiesce()
	e.clock.Advance(30 * time.Second)
	r.resume()
	e.heartbeat(r, "dev-1")
	e.clock.Advance(30 * time.Second)
	require.Eventually(t, func() bool { return e.attempt(a.ID).State == "expired" }, 10*time.Second, time.Millisecond)

	require.NoError(t, r.ws.CloseNow())
	require.Eventually(t, func() bool { return e.attempt(a.ID).State == "uncertain" }, 10*time.Second, time.Millisecond)
	r = e.runtime("dev-1", wiretest.Capabilities())
	e.clock.Advance(30 * time.Second)
	rid, rb := r.resume()
	assert.True(t, rb.Rollback)
	assert.Equal(t, q.SuspendID, rb.SuspendID)
	no := false
	r.send(rid, wire.EnvironmentResumed{EnvironmentID: envUUID, SuspendID: q.SuspendID, Accepted: &no, ErrorCode: "not_suspended"})
	require.Eventually(t, func() bool { return e.attempt(a.ID).Settled }, 10*time.Second, time.Millisecond)
	assert.Equal(t, "resume_refused", e.attempt(a.ID).State)
	assert.Equal(t, "not_suspended", e.attempt(a.ID).ErrorCode)
}

// A suspension holds only its own Environment: while X is suspended, a
// Turn of Y on the same device is placed and X's Turn and idle read are
// not; once X resumes, its Turn is placed.
func TestSuspensionHoldsOnlyItsEnvironment(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	sx := e.sessionOn("x", "codex", envUUID)
	sy := e.sessionOn("y", "codex", otherUUID)
	ctx := context.Background()
	yes := true

	out := e.startSuspend("env-x")
	qid, q := r.quiesce()
	assert.Equal(t, envUUID, q.EnvironmentID)
	r.send(qid, wire.EnvironmentQuiesced{EnvironmentID: envUUID, SuspendID: q.SuspendID, Accepted: &yes})
	require.Equal(t, "suspended", waitEnd(t, out).a.State)

	tx := e.queueTurnOn(sx, "x-held")
	e.queueTurnOn(sy, "y-runs")
	prepY, prep := r.prepare()
	assert.Equal(t, sy, prep.SessionID, "Y's Turn is placed on the device X's attempt fences")
	require.NotNil(t, prep.Configuration.LocalEnvironment)
	assert.Equal(t, otherUUID, prep.Configuration.LocalEnvironment.ID)
	r.start(prepY)
	assert.Equal(t, store.TurnQueued, e.turnState(tx.ID))
	_, err := e.gw.ReadWorkspace(ctx, sx, gateway.ReadQuery{Path: "a.txt", MaxBytes: 8})
	assert.Equal(t, gateway.ReadSuspended, readErr(t, err).Code, "nothing of X is placed")

	res := e.startResume("env-x", false)
	rid, rp := r.resume() // the next frame: no read of X was sent
	assert.Equal(t, q.SuspendID, rp.SuspendID)
	r.send(rid, wire.EnvironmentResumed{EnvironmentID: envUUID, SuspendID: q.SuspendID, Accepted: &yes})
	assert.Equal(t, "resumed", waitEnd(t, res).a.State)
	_, prep = r.prepare()
	assert.Equal(t, sx, prep.SessionID, "X's Turn goes once its attempt settled")
}

// An attempt goes only to the device that hosts its Environment, never to
// another connected device; an Environment whose device is offline, or
// that no device hosts, is not suspended anywhere else.
func TestAttemptGoesToTheEnvironmentsDevice(t *testing.T) {
	e := newEnv(t, true)
	r1 := e.runtime("dev-1", wiretest.Capabilities())
	r2 := e.runtime("dev-2", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	e.waitDeclared("dev-2", true)
	ctx := context.Background()
	yes := true

	e.host = "dev-2"
	e.localSession("two", "codex")
	out := e.startSuspend("env-two")
	qid, q := r2.quiesce()
	r2.send(qid, wire.EnvironmentQuiesced{EnvironmentID: envUUID, SuspendID: q.SuspendID, Accepted: &yes})
	a := waitEnd(t, out)
	require.NoError(t, a.err)
	assert.Equal(t, "suspended", a.a.State)
	assert.Equal(t, "dev-2", a.a.DeviceID)

	e.host = "dev-3"
	e.sessionOn("three", "codex", otherUUID)
	_, err := e.gw.SuspendEnvironment(ctx, "env-three", false)
	assert.ErrorIs(t, err, gateway.ErrDeviceOffline, "two devices are connected, but not the one hosting it")
	_, err = e.store.LatestSuspension(ctx, "env-three")
	assert.ErrorIs(t, err, store.ErrNotFound, "no attempt was stored")

	require.NoError(t, e.store.CreateEnvironment(ctx, store.Environment{ID: "env-unhosted", Project: testProject, Type: "self_hosted",
		Binding: json.RawMessage(`{"id":"` + otherUUID + `"}`), CreatedAt: e.clock.Now()}))
	require.NoError(t, e.store.CreateEnvironment(ctx, store.Environment{ID: "env-none", Project: testProject, Type: "none", CreatedAt: e.clock.Now()}))
	for _, id := range []string{"env-unhosted", "env-none"} {
		_, err = e.gw.SuspendEnvironment(ctx, id, false)
		assert.ErrorIs(t, err, gateway.ErrNoWorkspace, id)
	}

	// dev-1 was sent no suspension frame: its next frame is the Turn placed
	// on it.
	e.host = "dev-1"
	s1 := e.sessionOn("one", "codex", otherUUID)
	e.queueTurnOn(s1, "one")
	_, prep := r1.prepare()
	assert.Equal(t, s1, prep.SessionID)

	// The resume goes to the attempt's device too.
	res := e.startResume("env-two", false)
	rid, rp := r2.resume()
	assert.Equal(t, q.SuspendID, rp.SuspendID)
	r2.send(rid, wire.EnvironmentResumed{EnvironmentID: envUUID, SuspendID: q.SuspendID, Accepted: &yes})
	assert.Equal(t, "resumed", waitEnd(t, res).a.State)
}

// An attempt whose connection was lost before the answer is uncertain; the
// device's next connection restores it with the time its answer_wait has
// left (from the loss), and when that runs out nobody had resumed it, so
// Core rolls it back there.
func TestLostAttemptIsRolledBackOnTheNextConnection(t *testing.T) {
	e := newEnv(t, true)
	r := e.runtime("dev-1", wiretest.Capabilities())
	e.waitDeclared("dev-1", true)
	e.localSession("lost", "codex")
	ctx := context.Background()
	yes := true

	a, err := e.gw.SuspendEnvironment(ctx, "env-lost", false)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), a.OwnerEpoch, "stored with the connection it is sent on")
	_, q := r.quiesce()
	lostAt := e.clock.Now().UTC()
	require.NoError(t, r.ws.CloseNow())
	require.Eventually(t, func() bool { return e.attempt(a.ID).State == "uncertain" }, 10*time.Second, time.Millisecond)
	assert.Equal(t, lostAt, e.attempt(a.ID).UpdatedAt.UTC())

	e.clock.Advance(20 * time.Second) // offline: nothing to send on
	r = e.runtime("dev-1", wiretest.Capabilities())
	var saved peer.Saved
	require.Eventually(t, func() bool {
		var ok bool
		saved, ok = e.gw.SuspensionInstance(ctx, "dev-1", a.ID)
		return ok
	}, 10*time.Second, time.Millisecond, "the live connection adopts the open attempt")
	assert.Equal(t, "uncertain", saved.State)
	assert.Equal(t, map[string]time.Time{"answer_wait": lostAt.Add(30 * time.Second)}, utc(saved.Deadlines), "the 10 s that remain, not a fresh 30 s")
	assert.Equal(t, uint64(2), e.attempt(a.ID).OwnerEpoch, "the connection that adopted it carries it now: the reaper of epoch 1 leaves it alone")

	e.clock.Advance(10 * time.Second)
	rid, rb := r.resume()
	assert.True(t, rb.Rollback)
	assert.Equal(t, q.SuspendID, rb.SuspendID)
	r.send(rid, wire.EnvironmentResumed{EnvironmentID: envUUID, SuspendID: q.SuspendID, Accepted: &yes})
	require.Eventually(t, func() bool { return e.attempt(a.ID).Settled }, 10*time.Second, time.Millisecond)
	assert.Equal(t, "resumed", e.attempt(a.ID).State)
}

func utc(m map[string]time.Time) map[string]time.Time {
	out := make(map[string]time.Time, len(m))
	for k, v := range m {
		out[k] = v.UTC()
	}
	return out
}

// A Core that starts on a store with open attempts takes the ones it left
// with a request in flight (quiescing, or idle: stored, the quiesce perhaps
// written) to uncertain from now, keeps an uncertain one's time, and
// restores each onto the device's connection with the deadline that
// follows; each ends on its own (resumed, refused not_suspended, or expired:
// released, still open).
func TestRestartedCoreBoundsTheAttemptsItFinds(t *testing.T) {
	st := memory.New()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := peer.NewManualClock(t0)
	ctx := context.Background()
	ids := map[string]string{"uncertain": "00000000-0000-4000-8000-00000000000a", "quiescing": "00000000-0000-4000-8000-00000000000b", "idle": "00000000-0000-4000-8000-00000000000c"}
	binding := map[string]string{"uncertain": envUUID, "quiescing": otherUUID, "idle": "6f7a8b9c-0d1e-4f2a-8b3c-4d5e6f7a8b9c"}
	for state, id := range ids {
		envID := "env-" + state
		require.NoError(t, st.CreateEnvironment(ctx, store.Environment{ID: envID, Project: testProject, Type: "self_hosted",
			Binding: json.RawMessage(`{"id":"` + binding[state] + `"}`), DeviceID: "dev-1", CreatedAt: t0}))
		require.NoError(t, st.CreateSuspension(ctx, store.Suspension{ID: id, EnvironmentID: envID, DeviceID: "dev-1", State: state, CreatedAt: t0}))
	}
	clock.Advance(20 * time.Second) // the Core that stored them is gone
	e := &env{t: t, store: st, clock: clock, logs: &syncBuffer{}}
	e.issuer = credential.Issuer{Store: st, Now: clock.Now}
	mux := http.NewServeMux()
	e.srv = httptest.NewServer(mux)
	e.gw = gateway.New(gateway.Config{Store: st, Credentials: e.issuer, PublicURL: e.srv.URL, Clock: clock, Logger: slog.New(slog.NewJSONHandler(e.logs, nil))})
	e.gw.Register(mux)
	t.Cleanup(func() { e.gw.Close(); e.srv.Close() })
	restart := clock.Now().UTC()
	for state, want := range map[string]time.Time{"uncertain": t0, "quiescing": restart, "idle": restart} {
		a, err := st.GetSuspension(ctx, ids[state])
		require.NoError(t, err)
		assert.Equal(t, "uncertain", a.State, state)
		assert.Equal(t, want, a.UpdatedAt.UTC(), state)
	}

	r := e.runtime("dev-1", wiretest.Capabilities())
	for state, want := range map[string]time.Time{"uncertain": t0.Add(30 * time.Second), "quiescing": restart.Add(30 * time.Second), "idle": restart.Add(30 * time.Second)} {
		var saved peer.Saved
		require.Eventually(t, func() bool {
			var ok bool
			saved, ok = e.gw.SuspensionInstance(ctx, "dev-1", ids[state])
			return ok
		}, 10*time.Second, time.Millisecond)
		assert.Equal(t, map[string]time.Time{"answer_wait": want}, utc(saved.Deadlines), state)
	}
	yes, no := true, false

	// The uncertain one has 10 s left: its rollback comes first; the
	// Runtime still fenced it and reopens.
	clock.Advance(10 * time.Second)
	rid, rb := r.resume()
	assert.Equal(t, ids["uncertain"], rb.SuspendID)
	assert.True(t, rb.Rollback)
	r.send(rid, wire.EnvironmentResumed{EnvironmentID: rb.EnvironmentID, SuspendID: rb.SuspendID, Accepted: &yes})
	require.Eventually(t, func() bool { a, err := st.GetSuspension(ctx, ids["uncertain"]); return err == nil && a.Settled }, 10*time.Second, time.Millisecond)

	// The other two 20 s later: one answered not_suspended (the Runtime
	// holds no fence for it), one never answered.
	e.heartbeat(r, "dev-1")
	clock.Advance(20 * time.Second)
	got := map[string]wire.EnvironmentResume{}
	reqs := map[string]string{}
	for range 2 {
		id, p := r.resume()
		got[p.SuspendID], reqs[p.SuspendID] = p, id
	}
	require.Contains(t, got, ids["quiescing"])
	require.Contains(t, got, ids["idle"])
	p := got[ids["quiescing"]]
	r.send(reqs[ids["quiescing"]], wire.EnvironmentResumed{EnvironmentID: p.EnvironmentID, SuspendID: p.SuspendID, Accepted: &no, ErrorCode: "not_suspended"})
	require.Eventually(t, func() bool { a, err := st.GetSuspension(ctx, ids["quiescing"]); return err == nil && a.Settled }, 10*time.Second, time.Millisecond)
	e.heartbeat(r, "dev-1")
	clock.Advance(30 * time.Second)

	want := map[string][2]string{"uncertain": {"resumed", ""}, "quiescing": {"resume_refused", "not_suspended"}, "idle": {"expired", gateway.CodeAnswerTimeout}}
	require.Eventually(t, func() bool {
		a, err := st.GetSuspension(ctx, ids["idle"])
		return err == nil && a.State == "expired"
	}, 10*time.Second, time.Millisecond)
	for state, w := range want {
		a, err := st.GetSuspension(ctx, ids[state])
		require.NoError(t, err)
		assert.Equal(t, w[0], a.State, state)
		assert.Equal(t, w[1], a.ErrorCode, state)
	}
}
