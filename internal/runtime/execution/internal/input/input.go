// Package input is the input lifecycle on the Runtime's side of one
// connection (daemon-protocol.txt:124–143): active inputs Core sends a
// running Run as prompt_steer, one in flight per Run, handed to the
// adapter off the loop, receipted written once the native write returned
// and accepted or refused as the agent answers, never before written.
// Which Run an input goes to, and the Run's held done, come through Host.
package input

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/agentwire/agentwire/internal/runtime/execution/internal/conn"

	"github.com/agentwire/agentwire/fsm"
	inputfsm "github.com/agentwire/agentwire/fsm/input"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/guard"
	"github.com/agentwire/agentwire/internal/runtime/bounded"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Target is the Run an input is written to.
type Target struct {
	// Steerer is the Run's Executor as it takes active input; nil when
	// its Harness takes none.
	Steerer harness.Steerer
	// Caps are what the Run's Harness declared when it was admitted.
	Caps wire.AgentKindCapabilities
}

// Host is what the input lifecycle needs of its connection.
type Host interface {
	conn.Loop
	// Target finds the Run runID while it runs here with its Executor.
	Target(runID string) (Target, bool)
	// Drained tells the connection that the last input of runID in
	// flight settled (a done held back for it may go out).
	Drained(d *peer.Driver, runID string)
	// WriteBound bounds one native write.
	WriteBound() time.Duration
	// Clock times the retries of a write the adapter was not ready for.
	Clock() peer.Clock
}

// Book is the inputs of one connection's Runs; touched on the
// connection's loop only.
type Book struct {
	host Host
	runs map[string]*run
}

// New returns the input lifecycle of one connection.
func New(h Host) *Book { return &Book{host: h, runs: map[string]*run{}} }

// run is one Run's inputs.
type run struct {
	inFlight map[string]bool                // active inputs in flight, by input ID
	writing  map[string]bool                // inputs whose native write has not returned yet
	early    map[string]harness.InputNotice // verdicts that arrived before their write returned
}

func (b *Book) run(runID string) *run {
	r := b.runs[runID]
	if r == nil {
		r = &run{inFlight: map[string]bool{}, writing: map[string]bool{}, early: map[string]harness.InputNotice{}}
		b.runs[runID] = r
	}
	return r
}

// verdict is the argument of input_refused.
type verdict struct{ code, msg string }

// Key is the input machine's instance key of one input of a Run.
func Key(runID, inputID string) peer.Key {
	return peer.Key{Machine: inputfsm.Name, ID: peer.CompositeID(runID, inputID)}
}

// InFlight lists the inputs of runID in flight, in order.
func (b *Book) InFlight(runID string) []string {
	r := b.runs[runID]
	if r == nil {
		return nil
	}
	ids := make([]string, 0, len(r.inFlight))
	for id := range r.inFlight {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Forget drops the inputs of a Run the connection forgot.
func (b *Book) Forget(runID string) { delete(b.runs, runID) }

// Busy reports whether a refused prompt_steer for inputID was refused only
// because another input of the Run is in flight: its own input has not
// been sent before (no instance, or one still pending) while the Run holds
// a different one (daemon-protocol.txt:124). The route refusal of a fresh
// input ID counts too: the driver drops the pristine instance the guard
// refused.
func (b *Book) Busy(d *peer.Driver, runID, inputID string) bool {
	if inst, ok := d.Lookup(Key(runID, inputID)); ok && inst.State() != fsm.StateID(inputfsm.StatePending) {
		return false
	}
	r := b.runs[runID]
	if r == nil {
		return false
	}
	for id := range r.inFlight {
		if id != inputID {
			return true
		}
	}
	return false
}

// Stepped keeps the Run's set of inputs in flight and tells the
// connection once the last one settled.
func (b *Book) Stepped(ev *peer.Event, st fsm.Step) {
	runID, inputID, _ := peer.SplitCompositeID(ev.Key.ID)
	r := b.runs[runID]
	if r == nil {
		return // DoWriteNative records every input it takes
	}
	// In flight is what the table says: sent and not settled, i.e. out of
	// its initial state (queued at Core) and not in a terminal one.
	t := ev.Inst.Table()
	if to := st.To(); to == t.Initial || t.State(to).Outcome != fsm.OutcomeNone {
		delete(r.inFlight, inputID)
	} else {
		r.inFlight[inputID] = true
	}
	if len(r.inFlight) == 0 {
		b.host.Drained(ev.Driver(), runID)
	}
}

// Notify turns an adapter's InputNotice for a Run into the machine's
// local event, on the loop.
func (b *Book) Notify(runID string) harness.Notify {
	return func(n harness.InputNotice) {
		b.host.Post(func(d *peer.Driver) {
			key := Key(runID, n.InputID)
			if _, ok := d.Lookup(key); !ok {
				return
			}
			if r := b.runs[runID]; r != nil && r.writing[n.InputID] {
				// decision: the agent may answer before the adapter's write
				// call has returned to us; its verdict waits for the write's
				// completion, so written always precedes accepted on the
				// wire (daemon-protocol.txt:143-144). This holds in every
				// state, draining included: a Turn that settled before its
				// write returned must not report accepted before written.
				r.early[n.InputID] = n
				return
			}
			apply(d, key, n)
		})
	}
}

func apply(d *peer.Driver, key peer.Key, n harness.InputNotice) {
	if n.Accepted {
		_ = d.Local(key, fsm.EventID(inputfsm.EventNativeAccepted), nil)
		return
	}
	_ = d.Local(key, fsm.EventID(inputfsm.EventInputRefused), verdict{n.Code, n.Error})
}

func runOfInput(f *fsm.Firing[*peer.Event]) (runID, inputID string) {
	if m := f.Arg.Msg; m != nil {
		if p, ok := m.Payload.(wire.PromptSteer); ok {
			return m.ID, p.InputID
		}
		if p, ok := m.Payload.(wire.PromptSteerAck); ok {
			return m.ID, p.InputID
		}
	}
	runID, inputID, _ = peer.SplitCompositeID(f.Arg.Key.ID)
	return runID, inputID
}

// Hooks returns the input machine's Runtime hooks over b.
func (b *Book) Hooks() inputfsm.RuntimeHooks[*peer.Event] { return hooks{b} }

type hooks struct{ b *Book }

// GuardInputSlotFree: one input in flight per Run (daemon-protocol.txt:124);
// a second one is refused and answered busy.
func (h hooks) GuardInputSlotFree(f *fsm.Firing[*peer.Event]) bool {
	runID, inputID := runOfInput(f)
	r := h.b.runs[runID]
	if r == nil {
		return true // DoWriteNative answers run_inactive
	}
	for id := range r.inFlight {
		if id != inputID {
			return false
		}
	}
	return true
}

func (h hooks) GuardRetryableCode(f *fsm.Firing[*peer.Event]) bool {
	return guard.RetryableCode(f.Arg.Payload())
}

func (h hooks) GuardUnknownCode(f *fsm.Firing[*peer.Event]) bool {
	return guard.UnknownCode(f.Arg.Payload())
}

// DoWriteNative hands the input to the adapter outside the loop. A Run
// that is not running here, an adapter without active input or a Turn
// admitted without steering refuses it before any native call
// (daemon-protocol.txt:27).
func (h hooks) DoWriteNative(f *fsm.Firing[*peer.Event]) error {
	b, d := h.b, f.Arg.Driver()
	runID, inputID := runOfInput(f)
	key := Key(runID, inputID)
	p, _ := f.Arg.Msg.Payload.(wire.PromptSteer)
	refuse := func(code, msg string) {
		_ = d.Local(key, fsm.EventID(inputfsm.EventInputRefused), verdict{code, msg})
	}
	t, ok := b.host.Target(runID)
	if !ok {
		refuse("run_inactive", "the Run is not active on this connection")
		return nil
	}
	if t.Steerer == nil {
		refuse("unsupported", "the Harness does not take active input")
		return nil
	}
	if err := harness.CheckSteer(t.Caps, p.Input); err != nil {
		refuse("unsupported", bounded.Text(err.Error(), 512))
		return nil
	}
	r := b.run(runID)
	r.inFlight[inputID] = true
	r.writing[inputID] = true
	b.host.Go(func() {
		ctx, cancel := context.WithTimeout(b.host.Context(), b.host.WriteBound())
		err := steerOnceOpen(ctx, b.host, t.Steerer, runID, inputID, p.Input)
		cancel()
		b.host.Post(func(d *peer.Driver) {
			delete(r.writing, inputID)
			switch {
			case err == nil:
				_ = d.Local(key, fsm.EventID(inputfsm.EventNativeWriteDone), nil)
				if n, ok := r.early[inputID]; ok {
					delete(r.early, inputID)
					apply(d, key, n)
				}
			case errors.Is(err, harness.ErrRunInactive):
				_ = d.Local(key, fsm.EventID(inputfsm.EventInputRefused), verdict{"run_inactive", "the Run is not active"})
			case errors.Is(harness.Classify(true, err), harness.ErrContractViolation):
				_ = d.Local(key, fsm.EventID(inputfsm.EventInputRefused), verdict{"contract_violation", bounded.Text(err.Error(), 512)})
			default:
				// decision: a write that failed part-way may have delivered
				// the input, so its outcome is unknown, never resent
				// (daemon-protocol.txt:133).
				_ = d.Local(key, fsm.EventID(inputfsm.EventInputRefused), verdict{"outcome_unknown", bounded.Text(err.Error(), 512)})
			}
		})
	})
	return nil
}

// SendPromptSteerAck builds the receipt the step asks for from the event
// that caused it.
func (h hooks) SendPromptSteerAck(f *fsm.Firing[*peer.Event]) error {
	runID, inputID := runOfInput(f)
	no, yes := false, true
	ack := wire.PromptSteerAck{InputID: inputID, Accepted: &no}
	switch inputfsm.Event(f.Event) {
	case inputfsm.EventNativeWriteDone:
		ack.Written = true
	case inputfsm.EventNativeAccepted:
		ack.Accepted = &yes
	case inputfsm.EventNativeWrite:
		ack.ErrorCode, ack.Error = "outcome_unknown", "the native write did not complete within its bound"
	case inputfsm.EventInputRefused:
		v, _ := f.Arg.Local.(verdict)
		ack.ErrorCode, ack.Error = v.code, v.msg
		if ack.ErrorCode == "" {
			ack.ErrorCode = "rejected"
		}
	default:
		return nil
	}
	f.Arg.Driver().Send(peer.Outbound{ID: runID, Payload: ack}, nil)
	return nil
}

// DoPublishDone: the drain budget ended; Stepped sees the input settle and
// tells the connection, which publishes the held done.
func (h hooks) DoPublishDone(*fsm.Firing[*peer.Event]) error { return nil }

// steerOnceOpen writes in through s, and writes it again while the adapter
// answers ErrRunInactive for a Run that still runs here: its Executor.Run
// was called but has not opened the Turn to input yet (an adapter
// registers its Turn inside Run, after its own setup), while Core sends
// input as soon as the Run runs.
//
// decision: ErrRunInactive means nothing was written (harness.Steerer), so
// writing again replays nothing (daemon-protocol.txt:133); the retries
// stop when the Run settles here or the write's bound (ctx) ends, and the
// input is then refused run_inactive as before. A Run that never opens
// its Turn costs at most the bound, with backoff from 1 to 50 ms.
func steerOnceOpen(ctx context.Context, h Host, s harness.Steerer, runID, inputID string, in wire.MessageInput) error {
	wait := time.Millisecond
	for {
		err := s.Steer(ctx, runID, inputID, in)
		if !errors.Is(err, harness.ErrRunInactive) {
			return err
		}
		running := false
		if !h.Post(func(*peer.Driver) { _, running = h.Target(runID) }) || !running {
			return err
		}
		t := h.Clock().NewTimer(wait)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return err // still nothing written
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}
