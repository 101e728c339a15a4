package gateway

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/input"
	"github.com/agentwire/agentwire/peer"
	"github.com/agentwire/agentwire/peer/guard"
	"github.com/agentwire/agentwire/wire"
)

// This file delivers a running Turn's stored active inputs to its Run as
// prompt_steer with a durable receipt, one at a time (daemon-protocol.txt:124).
// The input machine decides every step; its hooks keep the Turn's cursor
// and journal. An input is sent at most once: whatever its outcome
// (accepted, refused, unknown) the next one follows and it is never resent
// (daemon-protocol.txt:128, 133).

// inputState is a Run's delivery position. It lives on runRec and is read
// and written only on the connection's loop.
type inputState struct {
	next     int64  // the Seq after which the next input to send is found
	cursor   int64  // the Turn's stored cursor (the last accepted Seq)
	inflight string // the input ID in flight, "" when none
	seqs     map[string]int64
}

func inputKeyOf(runID, inputID string) peer.Key {
	return peer.Key{Machine: input.Table.Name, ID: peer.CompositeID(runID, inputID)}
}

// DeliverInput wakes the delivery of a Turn's stored inputs; the API calls
// it after storing one. A Turn not running on a live connection keeps its
// inputs stored.
func (g *Gateway) DeliverInput(ctx context.Context, turnID string) {
	t, err := g.cfg.Store.GetTurn(ctx, turnID)
	if err != nil || t.State != store.TurnRunning {
		return
	}
	g.mu.Lock()
	c := g.conns[t.DeviceID]
	g.mu.Unlock()
	if c == nil || c.epoch != t.OwnerEpoch {
		return
	}
	r := c.run(t.RunID)
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	if r == nil || pc == nil {
		return
	}
	_ = pc.Do(ctx, func(d *peer.Driver) { c.pumpInput(d, r) })
}

// pumpInput sends the Run's next stored input unless one is in flight or
// the Run has ended. It runs on the connection's loop.
func (c *conn) pumpInput(d *peer.Driver, r *runRec) {
	in := &r.input
	select {
	case <-r.finished:
		return
	default:
	}
	if in.inflight != "" {
		return
	}
	// Reads of the Turn's input, which no batch writes: the loop's batch
	// need not be committed first.
	ctx, cancel := c.g.storeCtx()
	defer cancel()
	if in.seqs == nil {
		t, err := c.g.cfg.Store.GetTurn(ctx, r.turnID)
		if err != nil {
			c.log.Warn("gateway: read turn for input", "err", err)
			return
		}
		in.seqs, in.cursor, in.next = map[string]int64{}, t.InputCursor, t.InputCursor
	}
	list, err := c.g.cfg.Store.Inputs(ctx, r.turnID, in.next)
	if err != nil || len(list) == 0 {
		return
	}
	next := list[0]
	var msg wire.MessageInput
	if err := json.Unmarshal(next.Content, &msg); err != nil {
		c.log.Warn("gateway: stored input unreadable", "input_id", next.ID, "err", err)
		in.next = next.Seq
		return
	}
	in.inflight, in.next, in.seqs[next.ID] = next.ID, next.Seq, next.Seq
	d.Send(peer.Outbound{ID: r.runID, Payload: wire.PromptSteer{InputID: next.ID, Input: msg, DurableReceipt: true}}, func(err error) {
		var se *peer.SendError
		if errors.As(err, &se) {
			// Refused before anything left (the Run is not open for input
			// yet, say): nothing was delivered, so it stays queued.
			in.inflight, in.next = "", next.Seq-1
			c.log.Info("gateway: active input not sent", "input_id", next.ID, "err", err)
		}
	})
}

// inputHooks are the input machine's Core hooks for one connection.
type inputHooks struct{ c *conn }

var _ input.CoreHooks[*peer.Event] = inputHooks{}

func (h inputHooks) journal(r *runRec, typ string, payload any) error {
	return execHooks(h).journal(r, typ, payload)
}

// inputRun finds the Run record and input ID of an input machine step.
func (h inputHooks) inputRun(f *fsm.Firing[*peer.Event]) (*runRec, string) {
	runID, inputID, ok := peer.SplitCompositeID(f.Arg.Key.ID)
	if !ok {
		return nil, ""
	}
	return h.c.run(runID), inputID
}

// settleInput ends the in-flight slot of the Run and sends the next input.
func (h inputHooks) settleInput(r *runRec, inputID, outcome string, extra map[string]any) error {
	if r.input.inflight == inputID {
		r.input.inflight = ""
	}
	ev := map[string]any{"input_id": inputID, "outcome": outcome}
	for k, v := range extra {
		ev[k] = v
	}
	err := h.journal(r, "input_outcome", ev)
	h.c.pumpInput(h.c.d, r)
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

func (h inputHooks) GuardRetryableCode(f *fsm.Firing[*peer.Event]) bool {
	return guard.RetryableCode(f.Arg.Payload())
}

func (h inputHooks) GuardUnknownCode(f *fsm.Firing[*peer.Event]) bool {
	return guard.UnknownCode(f.Arg.Payload())
}

// DoAdvanceCursor: accepted is the one fact that moves the cursor, with
// one conditional write (daemon-protocol.txt:133).
func (h inputHooks) DoAdvanceCursor(f *fsm.Firing[*peer.Event]) error {
	r, id := h.inputRun(f)
	if r == nil {
		return nil
	}
	seq := r.input.seqs[id]
	var err error
	if seq > r.input.cursor {
		ctx, cancel := h.c.storeCtx()
		defer cancel()
		if err = h.c.g.cfg.Store.AdvanceInputCursor(ctx, r.turnID, r.input.cursor, seq); err == nil {
			r.input.cursor = seq
		}
	}
	return errors.Join(err, h.settleInput(r, id, "accepted", nil))
}

// DoKeepForRetry: not_ready or busy came before the native write; the
// input was not consumed and stays queued for the next delivery.
func (h inputHooks) DoKeepForRetry(f *fsm.Firing[*peer.Event]) error {
	r, id := h.inputRun(f)
	if r == nil {
		return nil
	}
	if seq := r.input.seqs[id]; seq > 0 && seq-1 < r.input.next {
		r.input.next = seq - 1
	}
	return h.settleInput(r, id, "retry", map[string]any{"error_code": ackOf(f).ErrorCode})
}

func (h inputHooks) DoRecordRejection(f *fsm.Firing[*peer.Event]) error {
	r, id := h.inputRun(f)
	if r == nil {
		return nil
	}
	return h.settleInput(r, id, "rejected", map[string]any{"error_code": ackOf(f).ErrorCode})
}

// DoMarkUnknown: 30 s without written, or the Run ended first; the input
// is never resent (daemon-protocol.txt:128).
func (h inputHooks) DoMarkUnknown(f *fsm.Firing[*peer.Event]) error {
	r, id := h.inputRun(f)
	if r == nil {
		return nil
	}
	return h.settleInput(r, id, "unknown", nil)
}

func (h inputHooks) DoSettleLate(f *fsm.Firing[*peer.Event]) error {
	r, id := h.inputRun(f)
	if r == nil {
		return nil
	}
	return h.journal(r, "late_input_receipt", map[string]any{"input_id": id, "receipt": ackOf(f)})
}
