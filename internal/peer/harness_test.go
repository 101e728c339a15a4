package peer_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/spec"
	"github.com/agentwire/agentwire/wire"
)

// The driver tests run the real preparation and run tables, loaded from
// the spec, for both roles, with a small app per role.

const (
	sessionID = "3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b"
	prepID    = "prepare-1"
	runID     = "run-1"
)

var (
	tablesOnce sync.Once
	tablesErr  error
	tableSet   []*fsm.Table
)

func tables(t testing.TB) []*fsm.Table {
	t.Helper()
	tablesOnce.Do(func() {
		model, err := spec.LoadDir(os.DirFS("../../spec"), ".", "spec/")
		if err != nil {
			tablesErr = err
			return
		}
		for _, name := range []string{"preparation", "run"} {
			m, ok := model.Machine(name)
			if !ok {
				tablesErr = fmt.Errorf("no machine %s", name)
				return
			}
			tb, err := m.Table()
			if err != nil {
				tablesErr = err
				return
			}
			tableSet = append(tableSet, tb)
		}
	})
	require.NoError(t, tablesErr)
	return tableSet
}

func event(t testing.TB, d *peer.Driver, machine, name string) fsm.EventID {
	t.Helper()
	tb, ok := d.Table(machine)
	require.True(t, ok, machine)
	id, err := tb.ParseEvent(name)
	require.NoError(t, err)
	return id
}

func testRouter(tables []*fsm.Table) peer.Router { return peer.MustCatalogRouter(tables) }

// prepRecord is what the apps keep per preparation instance.
type prepRecord struct {
	applied     uint64
	fingerprint string
	revision    uint64 // the Runtime's last published revision
}

// runRecord is what the apps keep per Run.
type runRecord struct {
	cancelDelivery string
	output         []string
}

// app is a test App for either role. It records every effect it performs,
// keeps the records its guards read, and (for the Runtime) answers like a
// scripted Harness: prepare → preparing, ready; start → started, deltas,
// done, unless told otherwise.
type app struct {
	t        testing.TB
	role     fsm.Role
	mu       sync.Mutex
	log      []string
	refused  []*peer.Refusal
	native   []string // native work started (Runtime)
	script   func(d *peer.Driver, run string)
	noReply  bool
	tableSet []*fsm.Table
	forgot   []peer.Key // instances the driver reported forgotten
}

func newApp(t testing.TB, role fsm.Role) *app {
	return &app{t: t, role: role, tableSet: tables(t)}
}

func (a *app) Binding(machine string) fsm.Binding[*peer.Event] { return binding{a, machine} }

func (a *app) Refused(r *peer.Refusal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.refused = append(a.refused, r)
}

func (a *app) Forgot(i *peer.Instance) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.forgot = append(a.forgot, i.Key)
}

func (a *app) Stepped(ev *peer.Event, s fsm.Step) {
	if ev.Msg == nil || s.Disposition() == fsm.Rejected {
		return
	}
	switch p := ev.Msg.Payload.(type) {
	case wire.PreparationStatus:
		if ev.Key.Machine != "preparation" {
			return
		}
		if rec := prep(ev.Inst); p.Revision > rec.applied {
			rec.applied = p.Revision
		}
	case wire.ExecutionPrepare:
		if rec := prep(ev.Inst); rec.fingerprint == "" {
			rec.fingerprint = string(ev.Msg.Payload.(wire.ExecutionPrepare).SessionID)
		}
	case wire.PromptCancel:
		if ev.Key.Machine == "run" {
			run(ev.Inst).cancelDelivery = p.DeliveryID
		}
	}
}

func prep(i *peer.Instance) *prepRecord {
	if i.Data == nil {
		i.Data = &prepRecord{}
	}
	return i.Data.(*prepRecord)
}

func run(i *peer.Instance) *runRecord {
	if i.Data == nil {
		i.Data = &runRecord{}
	}
	return i.Data.(*runRecord)
}

// mustSend is the completion of the app's own replies: a scripted reply
// that is refused is a test bug.
func (a *app) mustSend(err error) {
	if err != nil {
		a.t.Errorf("%s reply refused: %v", a.role, err)
	}
}

func (a *app) record(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log = append(a.log, s)
}

func (a *app) effects() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.log...)
}

type binding struct {
	a       *app
	machine string
}

func (b binding) Guard(g fsm.GuardID, f *fsm.Firing[*peer.Event]) bool {
	ev := f.Arg
	switch f.Table.GuardName(g) {
	case "newer_revision":
		st, ok := ev.Msg.Payload.(wire.PreparationStatus)
		return ok && st.Revision > prep(ev.Inst).applied
	case "same_fingerprint":
		p, ok := ev.Msg.Payload.(wire.ExecutionPrepare)
		return ok && p.SessionID == prep(ev.Inst).fingerprint
	case "rejects_prepare":
		st, ok := ev.Msg.Payload.(wire.PreparationStatus)
		return ok && st.Operation == "execution_prepare"
	case "read_only_profile":
		return false
	case "matches_cancel_delivery":
		ack, ok := ev.Msg.Payload.(wire.InteractionDecisionAck)
		return ok && ack.DeliveryID != "" && ack.DeliveryID == run(ev.Inst).cancelDelivery
	}
	b.a.t.Errorf("guard %s of %s has no test implementation", f.Table.GuardName(g), b.machine)
	return false
}

func (b binding) Perform(ef *fsm.Effect, f *fsm.Firing[*peer.Event]) error {
	ev := f.Arg
	b.a.record(ev.Key.String() + ": " + f.Table.EffectString(ef))
	d := ev.Driver()
	switch f.Table.EffectString(ef) {
	case "runtime: send preparation_status":
		if b.a.noReply || f.From != f.Table.Initial {
			return nil
		}
		rec := prep(ev.Inst)
		rec.revision++
		d.Send(peer.Outbound{ID: ev.Key.ID, Payload: wire.PreparationStatus{Revision: rec.revision, State: "preparing", Handle: "handle-1", ExecutorID: "executor-1"}}, b.a.mustSend)
		rec.revision++
		d.Send(peer.Outbound{ID: ev.Key.ID, Payload: wire.PreparationStatus{
			Revision: rec.revision, State: "ready", ExecutorID: "executor-1", Handle: "handle-1",
			ExpiresAt: 1800000000000,
		}}, b.a.mustSend)
	case "runtime: do start_native":
		b.a.mu.Lock()
		b.a.native = append(b.a.native, ev.Key.ID)
		b.a.mu.Unlock()
		if b.a.script != nil {
			b.a.script(d, ev.Key.ID)
		}
	}
	return nil
}

// startedThenDone is the Runtime's usual script for a prepared start.
func startedThenDone(prepareID string, prepRev uint64) func(d *peer.Driver, run string) {
	return func(d *peer.Driver, run string) {
		d.Send(peer.Outbound{ID: prepareID, Payload: wire.PreparationStatus{Revision: prepRev, State: "started", RunID: run, Handle: "handle-1", ExecutorID: "executor-1"}}, nil)
		d.Send(peer.Outbound{ID: run, Payload: wire.Delta{Delta: "hello", Sequence: 1}}, nil)
		d.Send(peer.Outbound{ID: run, Payload: wire.Done{Content: "hello"}}, nil)
	}
}

func prepare(t testing.TB) wire.ExecutionPrepare {
	t.Helper()
	var p wire.ExecutionPrepare
	raw := `{"session_id":"` + sessionID + `","configuration":{"agent_kind":"codex","execution_controls":{"web_search":"disabled","text_verbosity":"medium"},"agent_state_key":"agents-api-` + sessionID + `","strict_resume":true,"observe_tool_observations":true}}`
	require.NoError(t, json.Unmarshal([]byte(raw), &p))
	require.NoError(t, p.Validate())
	return p
}

func start() wire.ExecutionStart {
	return wire.ExecutionStart{ExecutorID: "executor-1", Handle: "handle-1", RunID: runID,
		Input: wire.MessageInput{{Content: []wire.InputContent{{Type: "input_text", Text: "hi"}}}}}
}

// pair is a Core driver and a Runtime driver wired back to back: pump moves
// every queued frame across, reporting each write as successful.
type pair struct {
	t              testing.TB
	clock          *peer.ManualClock
	core, runtime  *peer.Driver
	coreApp, rtApp *app
	frames         []string // "core> type id" / "runtime> type id", in order
}

func newPair(t testing.TB) *pair {
	t.Helper()
	clock := peer.NewManualClock(time.Unix(1_800_000_000, 0))
	p := &pair{t: t, clock: clock, coreApp: newApp(t, fsm.RoleCore), rtApp: newApp(t, fsm.RoleRuntime)}
	p.core = p.driver(fsm.RoleCore, p.coreApp)
	p.runtime = p.driver(fsm.RoleRuntime, p.rtApp)
	return p
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func (p *pair) driver(role fsm.Role, a *app) *peer.Driver {
	ts := tables(p.t)
	d, err := peer.New(peer.Config{
		Role: role, Tables: ts, Router: testRouter(ts), App: a, Clock: p.clock,
		Logger: quietLogger(), Label: role.String(),
	})
	require.NoError(p.t, err)
	return d
}

// pump moves frames both ways until neither side has anything queued.
func (p *pair) pump() {
	for moved := true; moved; {
		moved = p.flush(p.core, p.runtime, "core") || false
		moved = p.flush(p.runtime, p.core, "runtime") || moved
	}
}

func (p *pair) flush(from, to *peer.Driver, name string) bool {
	moved := false
	for {
		w, ok := from.NextWrite()
		if !ok {
			return moved
		}
		moved = true
		from.Written(w, nil)
		p.frames = append(p.frames, name+"> "+w.Type+" "+w.ID)
		_ = to.Deliver(w.Frame)
	}
}

// send queues o on d and returns a func reporting its outcome after pump.
func send(d *peer.Driver, o peer.Outbound) func() error {
	var (
		got  error
		done bool
	)
	d.Send(o, func(err error) { got, done = err, true })
	return func() error {
		if !done {
			return errors.New("the send is still pending")
		}
		return got
	}
}

func state(t testing.TB, d *peer.Driver, machine, id string) string {
	t.Helper()
	i, ok := d.Lookup(peer.Key{Machine: machine, ID: id})
	if !ok {
		return "(none)"
	}
	return i.StateName()
}

func joined(ss []string) string { return strings.Join(ss, "\n") }
