package daemon_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/daemon"
	"github.com/agentwire/agentwire/wire"
)

// TestRetiredCloseSettlesAndStops: Core closes the connection with 4001
// (the credential was revoked or the device retired) while a Run hangs and
// an idle Executor is retained. The daemon cancels the Run, closes both
// Executors as a shutdown does, never bootstraps again and returns the
// permanent refusal, which says why.
func TestRetiredCloseSettlesAndStops(t *testing.T) {
	a := &recorder{Adapter: script.New(script.Script{Steps: []script.Step{{Delta: "ok"}}})}
	c := newCore(t)
	l := &logs{}
	r := startWith(t, c, a, nil, l)
	ws := accept(t, c)
	read(t, ws)                                   // heartbeat
	runTurn(t, ws, "prepare-1", prepare, "run-1") // its Executor goes idle
	a.Set(script.Script{Steps: []script.Step{{Delta: "partial"}, {Hang: true}}})
	write(t, ws, "prompt_request", "run-2", `{"agent_kind":"script","run_id":"run-2","input":[{"content":[{"type":"input_text","text":"hi"}]}]}`)
	require.Equal(t, wire.TypeDelta, nonHeartbeat(t, ws).Type, "the Run is under way natively")

	require.NoError(t, ws.Close(4001, "credential revoked"))
	var err error
	select {
	case err = <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatal("4001 did not stop the daemon")
	}
	var perm *daemon.Permanent
	require.ErrorAs(t, err, &perm)
	assert.Contains(t, perm.What, "4001")
	assert.Contains(t, perm.What, "revoked")
	assert.False(t, errors.Is(err, daemon.ErrAbandoned))
	assert.EqualValues(t, 1, c.boots.Load(), "a revoked credential is never retried")
	_, closed := a.snapshot()
	assert.Equal(t, 2, closed, "the cancelled Run's Executor and the idle one are closed before the daemon exits")
	assert.True(t, strings.Contains(l.String(), "revoked"), "the log says why the daemon stopped")
	select {
	case ws := <-c.accepted:
		_ = ws.CloseNow()
		t.Fatal("the daemon reconnected after 4001")
	default:
	}
}
