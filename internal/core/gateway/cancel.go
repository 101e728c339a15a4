package gateway

import (
	"context"
	"errors"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/turn"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// JournalCancelRequested is the journal event of a prompt_cancel Core is
// about to send, with its delivery ID.
const JournalCancelRequested = "cancel_requested"

var (
	// ErrTurnFinished: the Turn already has its terminal state.
	ErrTurnFinished = errors.New("gateway: the Turn has finished")
	// ErrNotRunning: the Turn has no Run on a live connection to cancel.
	ErrNotRunning = errors.New("gateway: the Turn has no running Run on a live connection")
)

// CancelTurn cancels a Turn wherever it is, by firing cancel on its
// machine (spec/turn.yaml):
//
//   - queued (no worker claimed it): it is cancelled at once, by one
//     conditional write; nothing was ever sent for it;
//   - claimed (execution_prepare sent, no start yet): it moves to
//     cancelling, and the worker abandons the admission with
//     execution_release once it is ready instead of starting it; it never
//     starts (daemon-protocol.txt:112);
//   - starting: CancelTurn waits until the start was written;
//   - running: prompt_cancel goes to its Run with a fresh delivery ID,
//     which CancelTurn returns. The Run machine then waits 15 s for the
//     receipt that echoes it, which owns the terminal outcome; without one
//     it records cancel_unconfirmed (daemon-protocol.txt:133).
//
// The delivery ID is "" for the first two. ErrNotRunning means the Run is
// not on a live connection (its outcome is being recorded).
func (g *Gateway) CancelTurn(ctx context.Context, turnID string) (string, error) {
	for {
		t, err := g.cfg.Store.GetTurn(ctx, turnID)
		if err != nil {
			return "", err
		}
		if t.State.Terminal() {
			return "", ErrTurnFinished
		}
		in := g.turn(turnID)
		if in == nil {
			if t.State != store.TurnQueued {
				// Claimed by a process that is gone: reconciliation
				// settles it.
				return "", ErrNotRunning
			}
			_, err := g.moveStored(ctx, t, turn.Cancel, turn.Args{})
			if errors.Is(err, store.ErrStale) {
				continue // claimed meanwhile: look again
			}
			return "", err
		}
		changed := in.Changed()
		st, err := g.moveTurn(ctx, in, turn.Cancel, turn.Args{})
		switch {
		case errors.Is(err, turn.ErrRejected):
			if in.Ref().State.Terminal() {
				return "", ErrTurnFinished
			}
			// The table refuses a cancellation while the start is being
			// written: the Run is cancelled once it runs.
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-changed:
			}
			continue
		case err != nil:
			return "", err
		case st.SendCancel:
			t.RunID = in.Ref().RunID
			return g.cancelRunning(ctx, t)
		}
		return "", nil
	}
}

// cancelRunning sends prompt_cancel for a running Turn's Run.
func (g *Gateway) cancelRunning(ctx context.Context, t store.Turn) (string, error) {
	c := g.liveOwner(t.DeviceID, t.OwnerEpoch)
	if c == nil {
		return "", ErrNotRunning
	}
	r := c.run(t.RunID)
	c.mu.Lock()
	pc := c.pc
	c.mu.Unlock()
	if r == nil || pc == nil {
		return "", ErrNotRunning
	}
	delivery := credential.NewID("dlv")
	// decision: the cancellation is journaled before prompt_cancel can
	// leave, so a Core restarted after a crash knows its receipt owned the
	// outcome and records cancel_unconfirmed, as a lost connection does
	// (daemon-protocol.txt:133, 163); a record whose frame never left
	// claims nothing more than that the cancellation may have happened.
	if err := c.journalNow(r, JournalCancelRequested, map[string]string{"delivery_id": delivery}); err != nil {
		return "", err
	}
	r.addDelivery(delivery)
	err := pc.Send(ctx, peer.Outbound{ID: t.RunID, Payload: wire.PromptCancel{DeliveryID: delivery}})
	var se *peer.SendError
	switch {
	case err == nil:
		return delivery, nil
	case errors.As(err, &se), errors.Is(err, peer.ErrConnectionLost), errors.Is(err, peer.ErrClosed):
		// Nothing left: the Run has ended or its connection has.
		return "", ErrNotRunning
	}
	// A failed write: the Run machine went to cancelling (send_failed) and
	// the connection loss that follows records cancel_unconfirmed.
	return delivery, nil
}
