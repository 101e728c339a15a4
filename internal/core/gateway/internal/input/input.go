// Package input is the input lifecycle on Core's side of one connection
// (daemon-protocol.txt:124–133): a running Turn's stored active inputs
// go to its Run as prompt_steer with a durable receipt, one at a time.
// The input machine decides every step; the hooks keep the Turn's cursor
// and journal. An input is sent at most once: whatever its outcome
// (accepted, refused, unknown) the next one follows and it is never
// resent. Which Runs live on the connection, and the Turn's journal, are
// the connection's (Host).
package input

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"sync"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	inputfsm "github.com/agentwire/agentwire/fsm/input"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/peer/guard"
	"github.com/agentwire/agentwire/wire"
)

// Run is a Run of the connection, as the input lifecycle sees it.
type Run interface {
	TurnID() string
	RunID() string
	// Finished is closed once the Run's outcome is recorded.
	Finished() <-chan struct{}
	// Admits says why the Run cannot take in (no steering declared, an
	// image without message_images); nil when it can.
	Admits(in wire.MessageInput) error
}

// Host is what the input lifecycle needs of its connection.
type Host interface {
	// Run finds a Run of this connection by its ID.
	Run(runID string) (Run, bool)
	// Journal adds an entry to r's Turn journal, in the connection's
	// batch (hooks run on the loop).
	Journal(r Run, typ string, payload any) error
	// ReadCtx bounds a store read; StoreCtx a store write made from a
	// hook (what the loop's batch holds is made durable first).
	ReadCtx() (context.Context, context.CancelFunc)
	StoreCtx() (context.Context, context.CancelFunc)
	Logger() *slog.Logger
}

// Store is what the lifecycle needs of Core's store.
type Store interface {
	GetTurn(ctx context.Context, id string) (store.Turn, error)
	Inputs(ctx context.Context, turnID string, after int64) ([]store.Input, error)
	AdvanceInputCursor(ctx context.Context, turnID string, from, to int64) error
}

// Book is the delivery position of each Run of one connection; touched on
// the connection's loop only.
type Book struct {
	host Host
	st   Store
	mu   sync.Mutex // guards runs for Len
	runs map[string]*state
}

// New returns the input lifecycle of one connection.
func New(h Host, st Store) *Book { return &Book{host: h, st: st, runs: map[string]*state{}} }

// state is a Run's delivery position.
type state struct {
	next     int64  // the Seq after which the next input to send is found
	cursor   int64  // the Turn's stored cursor (the last accepted Seq)
	inflight string // the input ID in flight, "" when none
	seqs     map[string]int64
}

func (b *Book) state(runID string) *state {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.runs[runID]
	if s == nil {
		s = &state{}
		b.runs[runID] = s
	}
	return s
}

// Key is the input machine's instance key of one input of a Run.
func Key(runID, inputID string) peer.Key {
	return peer.Key{Machine: inputfsm.Name, ID: peer.CompositeID(runID, inputID)}
}

// Sent lists the keys of every input sent to runID, in order: once the
// Run is settled no receipt can follow, and the ones still in flight
// become unknown.
func (b *Book) Sent(runID string) []peer.Key {
	b.mu.Lock()
	s := b.runs[runID]
	var ids []string
	if s != nil {
		for id := range s.seqs {
			ids = append(ids, id)
		}
	}
	b.mu.Unlock()
	sort.Strings(ids) // a deterministic journal order
	keys := make([]peer.Key, len(ids))
	for i, id := range ids {
		keys[i] = Key(runID, id)
	}
	return keys
}

// Forget drops the position of a Run the connection forgot.
func (b *Book) Forget(runID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.runs, runID)
}

// Pump sends the Run's next stored input unless one is in flight or the
// Run has ended. It runs on the connection's loop.
func (b *Book) Pump(d *peer.Driver, r Run) {
	select {
	case <-r.Finished():
		return
	default:
	}
	in := b.state(r.RunID())
	if in.inflight != "" {
		return
	}
	// Reads of the Turn's input, which no batch writes: the loop's batch
	// need not be committed first.
	ctx, cancel := b.host.ReadCtx()
	defer cancel()
	if in.seqs == nil {
		t, err := b.st.GetTurn(ctx, r.TurnID())
		if err != nil {
			b.host.Logger().Warn("gateway: read turn for input", "err", err)
			return
		}
		in.seqs, in.cursor, in.next = map[string]int64{}, t.InputCursor, t.InputCursor
	}
	list, err := b.st.Inputs(ctx, r.TurnID(), in.next)
	if err != nil || len(list) == 0 {
		return
	}
	next := list[0]
	var msg wire.MessageInput
	if err := json.Unmarshal(next.Content, &msg); err != nil {
		b.host.Logger().Warn("gateway: stored input unreadable", "input_id", next.ID, "err", err)
		in.next = next.Seq
		return
	}
	if err := r.Admits(msg); err != nil {
		// decision: an input the Run's Harness did not declare it takes is
		// refused before anything is sent (daemon-protocol.txt:27): it is
		// journaled rejected, never sent, and the next one follows.
		in.next = next.Seq
		_ = b.host.Journal(r, "input_outcome", map[string]any{"input_id": next.ID, "outcome": "rejected", "error_code": "unsupported", "error": err.Error()})
		b.Pump(d, r)
		return
	}
	b.mu.Lock()
	in.inflight, in.next, in.seqs[next.ID] = next.ID, next.Seq, next.Seq
	b.mu.Unlock()
	d.Send(peer.Outbound{ID: r.RunID(), Payload: wire.PromptSteer{InputID: next.ID, Input: msg, DurableReceipt: true}}, func(err error) {
		var se *peer.SendError
		if errors.As(err, &se) {
			// Refused before anything left (the Run is not open for input
			// yet, say): nothing was delivered, so it stays queued.
			in.inflight, in.next = "", next.Seq-1
			b.host.Logger().Info("gateway: active input not sent", "input_id", next.ID, "err", err)
		}
	})
}

// Hooks returns the input machine's Core hooks over b.
func (b *Book) Hooks() inputfsm.CoreHooks[*peer.Event] { return hooks{b} }

type hooks struct{ b *Book }

// run finds the Run, its delivery position and the input ID of an input
// machine step.
func (h hooks) run(f *fsm.Firing[*peer.Event]) (Run, *state, string) {
	runID, inputID, ok := peer.SplitCompositeID(f.Arg.Key.ID)
	if !ok {
		return nil, nil, ""
	}
	r, ok := h.b.host.Run(runID)
	if !ok {
		return nil, nil, ""
	}
	return r, h.b.state(runID), inputID
}

// settle ends the in-flight slot of the Run and sends the next input.
func (h hooks) settle(f *fsm.Firing[*peer.Event], r Run, in *state, inputID, outcome string, extra map[string]any) error {
	if in.inflight == inputID {
		in.inflight = ""
	}
	ev := map[string]any{"input_id": inputID, "outcome": outcome}
	for k, v := range extra {
		ev[k] = v
	}
	err := h.b.host.Journal(r, "input_outcome", ev)
	h.b.Pump(f.Arg.Driver(), r)
	return err
}

func ackOf(f *fsm.Firing[*peer.Event]) wire.PromptSteerAck {
	if f.Arg != nil && f.Arg.Msg != nil {
		if a, ok := f.Arg.Msg.Payload.(wire.PromptSteerAck); ok {
			return a
		}
	}
	return wire.PromptSteerAck{}
}

func (h hooks) GuardRetryableCode(f *fsm.Firing[*peer.Event]) bool {
	return guard.RetryableCode(f.Arg.Payload())
}

func (h hooks) GuardUnknownCode(f *fsm.Firing[*peer.Event]) bool {
	return guard.UnknownCode(f.Arg.Payload())
}

// DoAdvanceCursor: accepted is the one fact that moves the cursor, with
// one conditional write (daemon-protocol.txt:133).
func (h hooks) DoAdvanceCursor(f *fsm.Firing[*peer.Event]) error {
	r, in, id := h.run(f)
	if r == nil {
		return nil
	}
	seq := in.seqs[id]
	var err error
	if seq > in.cursor {
		ctx, cancel := h.b.host.StoreCtx()
		defer cancel()
		if err = h.b.st.AdvanceInputCursor(ctx, r.TurnID(), in.cursor, seq); err == nil {
			in.cursor = seq
		}
	}
	return errors.Join(err, h.settle(f, r, in, id, "accepted", nil))
}

// DoKeepForRetry: not_ready or busy came before the native write; the
// input was not consumed and stays queued for the next delivery.
func (h hooks) DoKeepForRetry(f *fsm.Firing[*peer.Event]) error {
	r, in, id := h.run(f)
	if r == nil {
		return nil
	}
	if seq := in.seqs[id]; seq > 0 && seq-1 < in.next {
		in.next = seq - 1
	}
	return h.settle(f, r, in, id, "retry", map[string]any{"error_code": ackOf(f).ErrorCode})
}

func (h hooks) DoRecordRejection(f *fsm.Firing[*peer.Event]) error {
	r, in, id := h.run(f)
	if r == nil {
		return nil
	}
	return h.settle(f, r, in, id, "rejected", map[string]any{"error_code": ackOf(f).ErrorCode})
}

// DoMarkUnknown: 30 s without written, or the Run ended first; the input
// is never resent (daemon-protocol.txt:128).
func (h hooks) DoMarkUnknown(f *fsm.Firing[*peer.Event]) error {
	r, in, id := h.run(f)
	if r == nil {
		return nil
	}
	return h.settle(f, r, in, id, "unknown", nil)
}

func (h hooks) DoSettleLate(f *fsm.Firing[*peer.Event]) error {
	r, _, id := h.run(f)
	if r == nil {
		return nil
	}
	return h.b.host.Journal(r, "late_input_receipt", map[string]any{"input_id": id, "receipt": ackOf(f)})
}
