package peer_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/connection"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/transcript"
	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/spec"
	"github.com/agentwire/agentwire/wire"
)

// allTables loads every machine of the real spec.
func allTables(t *testing.T) []*fsm.Table {
	t.Helper()
	model, err := spec.LoadDir(os.DirFS("../../spec"), ".", "spec/")
	require.NoError(t, err)
	var out []*fsm.Table
	for _, m := range model.Machines {
		tb, err := m.Table()
		require.NoError(t, err)
		out = append(out, tb)
	}
	return out
}

// recorded is the scenario Recorder that also counts refusals.
type recorded struct {
	transcript.Recorder
	refused []*peer.Refusal
}

func (r *recorded) Refused(x *peer.Refusal) { r.refused = append(r.refused, x) }

func coreDriver(t *testing.T) (*peer.Driver, *recorded) {
	t.Helper()
	ts := allTables(t)
	a := &recorded{}
	d, err := peer.New(peer.Config{Role: fsm.RoleCore, Tables: ts, Router: peer.MustCatalogRouter(ts), App: a,
		Clock: peer.NewManualClock(time.Unix(0, 0)), Logger: quietLogger()})
	require.NoError(t, err)
	return d, a
}

func write(t *testing.T, d *peer.Driver, o peer.Outbound) error {
	t.Helper()
	var got error
	d.Send(o, func(err error) { got = err })
	if w, ok := d.NextWrite(); ok {
		d.Written(w, nil)
	}
	return got
}

func deliver(t *testing.T, d *peer.Driver, id string, p wire.Payload) error {
	t.Helper()
	f, err := wire.Encode(id, p, "")
	require.NoError(t, err)
	return d.Deliver(f)
}

// No execution_prepare before the connection's first valid heartbeat
// (daemon-protocol.txt:14), declared in spec/catalog.yaml requires:.
func TestNoAdmissionBeforeTheFirstHeartbeat(t *testing.T) {
	d, _ := coreDriver(t)
	conn := peer.Key{Machine: connection.Name}
	_, err := d.Open(conn)
	require.NoError(t, err)
	require.NoError(t, d.Local(conn, fsm.EventID(connection.EventUpgradeRequested), nil))
	require.Equal(t, "upgraded", state(t, d, connection.Name, ""))

	err = write(t, d, peer.Outbound{ID: prepID, Payload: prepare(t)})
	require.ErrorIs(t, err, peer.ErrRequirement)
	assert.Contains(t, err.Error(), "connection in live; it is upgraded")
	assert.Equal(t, "(none)", state(t, d, "preparation", prepID))

	available := true
	hb := wire.Heartbeat{SupportedAgentKinds: []wire.SupportedAgentKind{{Kind: "codex", Available: &available, Capabilities: wiretest.Capabilities()}}}
	require.NoError(t, deliver(t, d, "", hb))
	require.Equal(t, "live", state(t, d, connection.Name, ""))
	require.NoError(t, write(t, d, peer.Outbound{ID: prepID, Payload: prepare(t)}))
	assert.Equal(t, "requested", state(t, d, "preparation", prepID))
}

// The Runtime refuses an execution_prepare that arrives before the
// connection is live, and tells the app why.
func TestRuntimeRefusesAdmissionBeforeLive(t *testing.T) {
	ts := allTables(t)
	a := &recorded{}
	d, err := peer.New(peer.Config{Role: fsm.RoleRuntime, Tables: ts, Router: peer.MustCatalogRouter(ts), App: a, Logger: quietLogger()})
	require.NoError(t, err)
	_, err = d.Open(peer.Key{Machine: connection.Name})
	require.NoError(t, err)
	require.ErrorIs(t, deliver(t, d, prepID, prepare(t)), peer.ErrRequirement)
	require.Len(t, a.refused, 1)
	assert.Equal(t, peer.RefusedRequirement, a.refused[0].Kind)
}

// One active input at a time per Run (daemon-protocol.txt:124).
func TestOneInputInFlightPerRun(t *testing.T) {
	d, _ := coreDriver(t)
	steer := func(id string) wire.PromptSteer {
		return wire.PromptSteer{InputID: id, DurableReceipt: true, Input: wire.MessageInput{{Content: []wire.InputContent{{Type: "input_text", Text: "more"}}}}}
	}
	require.NoError(t, write(t, d, peer.Outbound{ID: runID, Payload: steer("i1")}))
	err := write(t, d, peer.Outbound{ID: runID, Payload: steer("i2")})
	require.ErrorIs(t, err, peer.ErrRequirement)
	assert.Contains(t, err.Error(), `"i1" is still in flight`)
	// Another Run's input is independent.
	require.NoError(t, write(t, d, peer.Outbound{ID: "run-2", Payload: steer("i1")}))

	accepted := true
	require.NoError(t, deliver(t, d, runID, wire.PromptSteerAck{InputID: "i1", Accepted: &accepted}))
	require.True(t, func() bool {
		i, _ := d.Lookup(peer.Key{Machine: "input", ID: peer.CompositeID(runID, "i1")})
		return i.Terminal()
	}())
	require.NoError(t, write(t, d, peer.Outbound{ID: runID, Payload: steer("i2")}), "the next input goes once the first settled")
}
