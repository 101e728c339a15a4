package execution_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/execution"
	"github.com/agentwire/agentwire/wire"
)

// The transcripts under spec/scenarios already pin the expiry that
// retries do not extend (expiry_not_extended_by_retry), capacity rejection
// (wire/preparation_capacity_retried, prompt_request_capacity), a stale handle
// (stale_handle_rejected, reconnect_fresh_handles) and idle reuse
// (idle_executor_*). These tests cover what a transcript at capacity 1
// cannot: 64 admission records, a replacement's handle, and what happens
// to an Executor whose Run was cancelled or whose close failed.

// TestAdmissionRecordsBoundAt64: 64 live admissions fill the records; the
// 65th execution_prepare is refused preparation_capacity with no handle,
// and once one admission settles (released) its record makes room.
func TestAdmissionRecordsBoundAt64(t *testing.T) {
	r := newRig(t, newCounting(), execution.Config{MaxActive: 100})
	ready := map[string]map[string]any{}
	for i := range 64 {
		id := fmt.Sprintf("prepare-%d", i)
		ready[id] = r.ready(id, prepare(sessionA))
	}
	r.send("execution_prepare", "prepare-64", prepare(sessionA))
	st := r.status("prepare-64", "rejected")
	assert.Equal(t, "preparation_capacity", st["error_code"])
	assert.Equal(t, "execution_prepare", st["operation"])
	assert.Nil(t, st["handle"], "a refused prepare mints no handle")

	r.send("execution_release", "prepare-0", map[string]any{"handle": ready["prepare-0"]["handle"]})
	r.status("prepare-0", "released")
	r.ready("prepare-64", prepare(sessionA))
	// The other 63 are still live and startable.
	r.start("prepare-63", ready["prepare-63"], "run-63")
	r.status("prepare-63", "starting")
	r.status("prepare-63", "started")
}

// TestAdmissionRecordsDoNotGrow: a connection that prepares and releases
// many admissions keeps a bounded number of records.
func TestAdmissionRecordsDoNotGrow(t *testing.T) {
	r := newRig(t, newCounting(), execution.Config{MaxActive: 4})
	for i := range 300 {
		id := fmt.Sprintf("prepare-%d", i)
		ready := r.ready(id, prepare(sessionA))
		r.send("execution_release", id, map[string]any{"handle": ready["handle"]})
		r.status(id, "released")
	}
	var n int
	require.NoError(t, r.conn.Do(context.Background(), func(*peer.Driver) { n = r.sess.AdmissionRecords() }))
	assert.LessOrEqual(t, n, 64, "no more than the driver retains")
}

// TestOldHandleNeverConsumesReplacement: after A is released, B (the
// replacement admission for the same Session) is granted; a start of B
// that names A's handle is rejected and leaves B ready, and a start on
// A's request naming B's handle cannot take B either.
func TestOldHandleNeverConsumesReplacement(t *testing.T) {
	r := newRig(t, newCounting(), execution.Config{MaxActive: 2})
	a := r.ready("prepare-a", prepare(sessionA))
	r.send("execution_release", "prepare-a", map[string]any{"handle": a["handle"]})
	r.status("prepare-a", "released")
	b := r.ready("prepare-b", prepare(sessionA))
	require.NotEqual(t, a["handle"], b["handle"])

	old := map[string]any{"executor_id": b["executor_id"], "handle": a["handle"]}
	// Each start names a fresh Run ID: a rejected start ends its Run
	// (run.yaml, not_started).
	r.start("prepare-b", old, "run-1")
	st := r.status("prepare-b", "rejected")
	assert.Equal(t, "invalid_start", st["error_code"])
	assert.Equal(t, a["handle"], st["handle"])

	r.start("prepare-a", b, "run-2")
	st = r.status("prepare-a", "rejected")
	assert.Equal(t, "execution_start", st["operation"])

	r.start("prepare-b", b, "run-3")
	r.status("prepare-b", "starting")
	started := r.status("prepare-b", "started")
	assert.Equal(t, b["handle"], started["handle"])
	assert.Equal(t, float64(4), started["revision"], "preparing, ready, starting, started: the rejections minted no revision")
}

// TestCancelledRunClosesItsExecutor: a cancelled Run's Executor is closed,
// not kept idle, so the next admission with the same configuration
// prepares natively.
func TestCancelledRunClosesItsExecutor(t *testing.T) {
	a := newCounting()
	a.hang = true
	pool := execution.NewPool(execution.PoolConfig{Logger: quiet})
	r := newRig(t, a, execution.Config{MaxActive: 1, Pool: pool})
	ready := r.ready("prepare", prepare(sessionA))
	r.start("prepare", ready, "run")
	r.status("prepare", "starting")
	r.status("prepare", "started")
	r.send("prompt_cancel", "run", map[string]any{"delivery_id": "cancel"})
	assert.Equal(t, "done", r.next().Type)
	assert.Equal(t, "interaction_decision_ack", r.next().Type)
	assert.Equal(t, "executor 1 closed ok=true", <-a.closed)
	assert.Zero(t, pool.IdleCount())
	// The close freed the slot on the loop; a prepare queued behind it is
	// admitted and prepares a second Executor.
	require.NoError(t, r.conn.Do(context.Background(), func(*peer.Driver) {}))
	second := r.ready("prepare-2", prepare(sessionA))
	assert.NotEqual(t, ready["executor_id"], second["executor_id"])
	assert.Nil(t, second["reused"])
	assert.EqualValues(t, 2, a.prepared.Load())
}

// TestSettledRunExecutorReusedOnlyForIdenticalConfiguration: a completed
// Run leaves its Executor idle; another Session's configuration prepares
// natively, the identical one reuses it.
func TestSettledRunExecutorReusedOnlyForIdenticalConfiguration(t *testing.T) {
	a := newCounting()
	pool := execution.NewPool(execution.PoolConfig{Logger: quiet})
	r := newRig(t, a, execution.Config{MaxActive: 2, Pool: pool})
	ready := r.ready("prepare", prepare(sessionA))
	r.start("prepare", ready, "run")
	r.status("prepare", "starting")
	r.status("prepare", "started")
	assert.Equal(t, "done", r.next().Type)
	assert.Equal(t, 1, pool.IdleCount())

	other := r.ready("prepare-other", prepare("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"))
	assert.NotEqual(t, ready["executor_id"], other["executor_id"])

	r.send("execution_prepare", "prepare-same", prepare(sessionA))
	same := r.status("prepare-same", "ready")
	assert.Equal(t, ready["executor_id"], same["executor_id"])
	assert.Equal(t, true, same["reused"])
	assert.Equal(t, float64(1), same["revision"])
	assert.EqualValues(t, 2, a.prepared.Load(), "the reuse prepared nothing natively")
	assert.Zero(t, pool.IdleCount())
}

// TestIdleExecutorServesTheSessionsNextTurn: Core's next Turn of a
// Session resumes the native Session the last done reported, and that
// configuration takes the Executor that holds it (a Codex thread admits one
// writer: a fresh Executor resuming it beside the idle one is refused). The
// first configuration, without the native Session, no longer matches it.
func TestIdleExecutorServesTheSessionsNextTurn(t *testing.T) {
	a := newCounting()
	a.nativeSession = "thread-1"
	pool := execution.NewPool(execution.PoolConfig{Logger: quiet})
	r := newRig(t, a, execution.Config{MaxActive: 2, Pool: pool})
	ready := r.ready("prepare", prepare(sessionA))
	r.start("prepare", ready, "run")
	r.status("prepare", "starting")
	r.status("prepare", "started")
	assert.Equal(t, "done", r.next().Type)
	assert.Equal(t, 1, pool.IdleCount())

	first := r.ready("prepare-first", prepare(sessionA))
	assert.NotEqual(t, ready["executor_id"], first["executor_id"], "the configuration without the native Session is not the idle one's")
	assert.Nil(t, first["reused"])

	next := prepare(sessionA)
	next.Configuration.AgentSessionID = "thread-1"
	r.send("execution_prepare", "prepare-next", next)
	resumed := r.status("prepare-next", "ready")
	assert.Equal(t, ready["executor_id"], resumed["executor_id"])
	assert.Equal(t, true, resumed["reused"])
	assert.EqualValues(t, 2, a.prepared.Load(), "the next Turn prepared nothing natively")
}

// TestFailedCloseStaysOwnedAndHoldsCapacity: a release whose close fails
// reports cleanup_unconfirmed; the Executor is the Pool's (Held), a new
// Session on the same Pool (a later connection) still cannot take its
// slot, and the Pool's serialized retry closes it and frees the slot.
func TestFailedCloseStaysOwnedAndHoldsCapacity(t *testing.T) {
	a := newCounting()
	a.closeFailures = 1
	clock := peer.NewManualClock(time.Unix(1_800_000_000, 0))
	pool := execution.NewPool(execution.PoolConfig{Clock: clock, Logger: quiet})
	r := newRig(t, a, execution.Config{MaxActive: 1, Pool: pool, Clock: clock})
	ready := r.ready("prepare", prepare(sessionA))
	r.send("execution_release", "prepare", map[string]any{"handle": ready["handle"]})
	st := r.status("prepare", "failed")
	assert.Equal(t, "cleanup_unconfirmed", st["error_code"])
	assert.Equal(t, "executor 1 closed ok=false", <-a.closed)
	assert.Equal(t, 1, pool.Held())

	next := newRig(t, a, execution.Config{MaxActive: 1, Pool: pool, Clock: clock})
	next.send("execution_prepare", "prepare", prepare(sessionA))
	assert.Equal(t, "preparation_capacity", next.status("prepare", "rejected")["error_code"])

	ctx, cancel := context.WithCancel(context.Background())
	maintained := make(chan struct{})
	go func() {
		defer close(maintained)
		pool.Maintain(ctx)
	}()
	defer func() {
		cancel()
		<-maintained
	}()
	// Maintain arms its retry timer on its own goroutine; advancing until
	// the retry ran needs no wall-clock wait of its own.
	require.Eventually(t, func() bool {
		clock.Advance(execution.DefaultRetryMin)
		return pool.Held() == 0
	}, 10*time.Second, time.Millisecond)
	assert.Equal(t, "executor 1 closed ok=true", <-a.closed)
	next.ready("prepare-2", prepare(sessionA))
}

// TestRunErrorClassificationPassesThrough: the Runtime never classifies an
// engine failure; the code and http_status an adapter puts on an error
// frame reach Core as the adapter wrote them (valid, unknown or
// malformed), and Core's wire.ClassifyEngineFailure decides
// (daemon-protocol.txt:169-173). The Runtime's own error for a failed
// Turn carries no code (it never classifies prose).
func TestRunErrorClassificationPassesThrough(t *testing.T) {
	a := newCounting()
	a.emit = []wire.Payload{
		wire.ErrorFrame{Error: "upstream 503", Code: wire.NativeJSON(`"connection_failed"`), HTTPStatus: wire.NativeJSON(`503`)},
		wire.ErrorFrame{Error: "odd", Code: wire.NativeJSON(`"not_a_code"`), HTTPStatus: wire.NativeJSON(`"503"`)},
		wire.ErrorFrame{Error: "limit", Code: wire.NativeJSON(`"rate_limit_exceeded"`), HTTPStatus: wire.NativeJSON(`429`)},
	}
	r := newRig(t, a, execution.Config{MaxActive: 1})
	r.send("prompt_request", "run", map[string]any{"agent_kind": "test", "run_id": "run",
		"input": []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": "hi"}}}}})
	want := []struct {
		code   wire.EngineFailureCode
		status int
		ok     bool
	}{{wire.EngineConnectionFailed, 503, true}, {"", 0, false}, {"rate_limit_exceeded", 0, true}}
	for i, w := range want {
		f := r.next()
		require.Equal(t, "error", f.Type)
		b, _ := json.Marshal(f.Payload)
		var ef wire.ErrorFrame
		require.NoError(t, json.Unmarshal(b, &ef))
		assert.Equal(t, a.emit[i].(wire.ErrorFrame).Code, ef.Code, "forwarded unchanged")
		code, status, ok := wire.ClassifyEngineFailure(ef)
		assert.Equal(t, w.code, code)
		assert.Equal(t, w.status, status)
		assert.Equal(t, w.ok, ok)
	}
	assert.Equal(t, "done", r.next().Type, "an unclassified error never discards done")
}

// TestFailedPreparationWithNilPointerFreesItsSlot: an adapter that fails
// and returns its own nil pointer as the Executor (a non-nil interface) is
// not closed (that Close would panic on nil), and its slot is free before
// the next frame is read: with one slot, the next prepare is admitted, not
// refused preparation_capacity.
func TestFailedPreparationWithNilPointerFreesItsSlot(t *testing.T) {
	a := newCounting()
	a.prepareFailsNil = true
	r := newRig(t, a, execution.Config{MaxActive: 1})
	r.send("execution_prepare", "first", prepare(sessionA))
	r.status("first", "preparing")
	assert.Equal(t, "preparation_failed", r.status("first", "failed")["error_code"])
	a.prepareFailsNil = false
	r.send("execution_prepare", "second", prepare(sessionA))
	r.status("second", "preparing")
	r.status("second", "ready")
	select {
	case got := <-a.closed:
		t.Fatalf("nothing was to be closed, got %q", got)
	default:
	}
}

// TestFailedFactoryResourceIsClosed: a preparation that fails but returns
// the resource it created is reported failed, and that resource is closed
// (daemon-protocol.txt:177: wrappers keep both values); a close that fails
// keeps it owned, holding its capacity.
func TestFailedFactoryResourceIsClosed(t *testing.T) {
	for _, closeFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("close_fails=%v", closeFails), func(t *testing.T) {
			a := newCounting()
			a.prepareFails = true
			if closeFails {
				a.closeFailures = 1
			}
			pool := execution.NewPool(execution.PoolConfig{Logger: quiet})
			r := newRig(t, a, execution.Config{MaxActive: 1, Pool: pool})
			r.send("execution_prepare", "prepare", prepare(sessionA))
			r.status("prepare", "preparing")
			st := r.status("prepare", "failed")
			assert.Equal(t, "preparation_failed", st["error_code"])
			select {
			case got := <-a.closed:
				assert.Equal(t, fmt.Sprintf("executor 1 closed ok=%v", !closeFails), got)
			case <-time.After(10 * time.Second): // a failure bound: the close is what is awaited
				t.Fatal("the resource the failed factory returned was never closed")
			}
			if closeFails {
				// The Pool takes the resource right after its close returned.
				require.Eventually(t, func() bool { return pool.Held() == 1 }, 10*time.Second, time.Millisecond,
					"an unconfirmed cleanup keeps the resource owned")
			} else {
				require.NoError(t, r.conn.Do(context.Background(), func(*peer.Driver) {}))
				assert.Zero(t, pool.Held())
			}
		})
	}
}
