package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/machines"
)

// Instance is one machine instance of a Turn as the live view shows it:
// its current state and the transitions taken so far (pairs of states,
// which name the diagram's arrows tr-<from>-<to>).
type Instance struct {
	Machine string `json:"machine"`
	Key     string `json:"key"`
	State   string `json:"state"`
	Settled bool   `json:"settled"`
	// Transitions lists each pair of states joined at least once, in the
	// order first taken; Steps counts every step, repeats included.
	Transitions [][2]string `json:"transitions"`
	Steps       int         `json:"steps"`
	// Source says where the state comes from: "store" (Core persists the
	// instance's state), "journal" (replayed from the Turn's journal
	// through the generated table) or "derived" (read off the Turn's
	// persisted state).
	Source string `json:"source"`
}

// Machines is the feed the Turn page lights its diagrams from.
type Machines struct {
	TurnID string `json:"turn_id"`
	// Status is the Turn's public status projection, as the API shows it.
	Status    store.Status `json:"status"`
	Instances []Instance   `json:"instances"`
	// Truncated: the journal was longer than the replay reads.
	Truncated bool `json:"truncated,omitempty"`
}

// maxReplay bounds the journal events one feed request replays.
const maxReplay = 20000

// machinesFeed answers GET /console/turns/{id}/machines. The page asks
// for it on every event of the stream, so it reads the store rather than
// spending the project's API request rate; it keeps the API's rule that a
// key sees only its own project's Turns.
func (c *Console) machinesFeed(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("turn_id")
	t, err := c.cfg.Store.GetTurn(r.Context(), id)
	var ses store.Session
	if err == nil {
		ses, err = c.cfg.Store.GetSession(r.Context(), t.SessionID)
	}
	if errors.Is(err, store.ErrNotFound) || (err == nil && !current(r).sees(ses.Project)) {
		consoleError(w, http.StatusNotFound, "not_found", "turn_id", "turn not found")
		return
	}
	if err != nil {
		c.cfg.Logger.Error("console: machines", "turn_id", id, "err", err)
		consoleError(w, http.StatusInternalServerError, "internal", "", "the Turn could not be read")
		return
	}
	m, err := TurnMachines(r.Context(), c.cfg.Store, id)
	if err != nil {
		c.cfg.Logger.Error("console: machines", "turn_id", id, "err", err)
		consoleError(w, http.StatusInternalServerError, "internal", "", "the Turn's journal could not be read")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(m)
}

// replay is one instance stepped through its generated table.
type replay struct {
	t    *fsm.Table
	inst Instance
	cur  fsm.StateID
}

func newReplay(machine, key string) *replay {
	t := machines.ByName(machine)
	return &replay{t: t, cur: t.Initial, inst: Instance{Machine: machine, Key: key, State: t.StateName(t.Initial), Source: "journal", Transitions: [][2]string{}}}
}

// fire steps the instance by event with held guards; an event the table
// rejects or ignores here leaves it as it was (the journal holds frames
// Core accepted, so that happens only where Core's view is coarser than
// the table's, and the view then says less rather than something false).
func (p *replay) fire(event string, held ...string) {
	e, err := p.t.ParseEvent(event)
	if err != nil {
		return
	}
	var set fsm.GuardSet
	for i, g := range p.t.Guards {
		for _, h := range held {
			if g == h {
				set = set.With(fsm.GuardID(i + 1))
			}
		}
	}
	s, err := p.t.Transition(p.cur, e, set)
	if err != nil || (s.Disposition() != fsm.Moved && s.Disposition() != fsm.Stayed) {
		return
	}
	from, to := p.t.StateName(p.cur), p.t.StateName(s.To())
	if !slices.Contains(p.inst.Transitions, [2]string{from, to}) {
		p.inst.Transitions = append(p.inst.Transitions, [2]string{from, to})
	}
	p.inst.Steps++
	p.cur = s.To()
	p.inst.State = to
	p.inst.Settled = p.t.State(s.To()).Outcome != fsm.OutcomeNone
}

// TurnMachines reads a Turn's instances: the Turn itself from its
// persisted state, its preparation derived from that state, and its Run,
// each active input and each interaction replayed from the journal.
//
// decision: Core journals the frames a Run's subscription observed and its
// own answers (cancel_requested, decisions, receipts, outcomes), not the
// preparation frames or the Runtime's local events, so the replay fires
// the table's events those records stand for and no others: the start
// (execution_start, whose arrow prompt_request shares) when the first Run
// frame arrives, since Core subscribes and then sends the start before any
// frame of the Run can come (daemon-protocol.txt:110); guards held are those
// the journal shows true (Core journals only frames it accepted,
// daemon-protocol.txt:151), the receipt's error code deciding
// retry_later and unsettled_cancel.
func TurnMachines(ctx context.Context, st store.Store, turnID string) (Machines, error) {
	t, err := st.GetTurn(ctx, turnID)
	if err != nil {
		return Machines{}, err
	}
	out := Machines{TurnID: turnID, Status: t.Status()}
	turnTable := machines.ByName("turn")
	turnInst := Instance{Machine: "turn", Key: turnID, State: string(t.State), Source: "store", Transitions: [][2]string{}}
	if sid, err := turnTable.ParseState(string(t.State)); err == nil {
		turnInst.Settled = turnTable.State(sid).Outcome != fsm.OutcomeNone
	}

	run := newReplay("run", t.RunID)
	started := false
	cancelDelivery := ""
	var inputs, interactions []*replay
	byInput := map[string]*replay{}
	byInteraction := map[string]*replay{}
	byRequest := map[string]*replay{} // a permission's request_id, a call's call_id
	byDelivery := map[string]*replay{}
	var events []store.Event
	var after int64
	for len(events) < maxReplay {
		page, err := st.Events(ctx, turnID, after, 500)
		if err != nil {
			return Machines{}, err
		}
		if len(page) == 0 {
			break
		}
		events = append(events, page...)
		after = page[len(page)-1].Seq
	}
	if len(events) >= maxReplay {
		out.Truncated = true
	}
	// An answer's delivery ID names its interaction only in the outcome
	// Core journals after the receipt; read those first.
	deliveryOf := map[string]string{}
	for _, e := range events {
		if e.Type == "interaction_outcome" {
			var p struct{ DeliveryID, InteractionID string }
			if json.Unmarshal(e.Payload, &p) == nil && p.DeliveryID != "" {
				deliveryOf[p.DeliveryID] = p.InteractionID
			}
		}
	}
	for _, e := range events {
		var p struct {
			InteractionID string `json:"interaction_id"`
			DeliveryID    string `json:"delivery_id"`
			InputID       string `json:"input_id"`
			RequestID     string `json:"request_id"`
			CallID        string `json:"call_id"`
			Applied       *bool  `json:"applied"`
			Accepted      *bool  `json:"accepted"`
			Written       bool   `json:"written"`
			ErrorCode     string `json:"error_code"`
			Outcome       json.RawMessage
			Reason        string          `json:"reason"`
			Request       json.RawMessage `json:"request"`
		}
		_ = json.Unmarshal(e.Payload, &p)
		switch e.Type {
		case "delta", "thinking", "output_message", "tool_call", "usage", "error", "done":
			if !started {
				started = true
				run.fire("execution_start")
			}
			run.fire(e.Type)
		case "cancel_requested":
			cancelDelivery = p.DeliveryID
			if started {
				run.fire("prompt_cancel")
			}
		case "observation":
			if p.Reason == store.ReasonEventStreamIncomplete && started {
				run.fire("connection_lost")
			}
		case "permission_request", "prompt_for_user_choice", "function_call":
			in := newReplay("interaction", p.InteractionID)
			in.fire(e.Type)
			interactions = append(interactions, in)
			byInteraction[p.InteractionID] = in
			var req struct {
				RequestID string `json:"request_id"`
				CallID    string `json:"call_id"`
			}
			_ = json.Unmarshal(p.Request, &req)
			for _, k := range []string{req.RequestID, req.CallID, p.CallID} {
				if k != "" {
					byRequest[k] = in
				}
			}
		case "permission_decision", "prompt_for_user_choice_decision", "function_result":
			in := byInteraction[deliveryOf[p.DeliveryID]]
			if in == nil {
				in = byRequest[p.CallID]
			}
			if in == nil {
				in = onlyPending(interactions)
			}
			if in != nil {
				byDelivery[p.DeliveryID] = in
				in.fire(e.Type, "matches_request_kind")
			}
		case "permission_cancel":
			if in := byRequest[p.RequestID]; in != nil {
				in.fire("permission_cancel", "permission_kind")
			}
		case "interaction_decision_ack":
			applied := p.Applied != nil && *p.Applied
			if p.DeliveryID != "" && p.DeliveryID == cancelDelivery {
				// The cancellation's receipt (daemon-protocol.txt:144).
				switch {
				case applied:
					run.fire("cancel_ack_applied", "matches_cancel_delivery")
				case p.ErrorCode == "runtime_error":
					run.fire("cancel_ack_refused", "unsettled_cancel")
				default:
					run.fire("cancel_ack_refused", "matches_cancel_delivery")
				}
				break
			}
			if in := byDelivery[p.DeliveryID]; in != nil {
				if applied {
					in.fire("ack_applied", "current_delivery")
				} else if p.ErrorCode == "not_ready" {
					in.fire("ack_refused", "retry_later")
				} else {
					in.fire("ack_refused", "current_delivery")
				}
			}
		case "interaction_outcome":
			var o struct{ Outcome string }
			_ = json.Unmarshal(e.Payload, &o)
			if in := byInteraction[p.InteractionID]; in != nil && (o.Outcome == "unanswered" || o.Outcome == "orphaned") {
				in.fire("run_closed")
			}
		case "prompt_steer":
			in := newReplay("input", p.InputID)
			in.fire("prompt_steer")
			inputs = append(inputs, in)
			byInput[p.InputID] = in
		case "prompt_steer_ack":
			in := byInput[p.InputID]
			switch {
			case in == nil:
			case p.Accepted != nil && *p.Accepted:
				in.fire("ack_accepted")
			case p.Written:
				in.fire("ack_written")
			default:
				in.fire("ack_rejected")
			}
		}
	}
	out.Instances = append(out.Instances, turnInst, preparationOf(t, started))
	if started || t.RunID != "" {
		out.Instances = append(out.Instances, run.inst)
	}
	for _, in := range inputs {
		out.Instances = append(out.Instances, in.inst)
	}
	for _, in := range interactions {
		out.Instances = append(out.Instances, in.inst)
	}
	return out, nil
}

// onlyPending is the one interaction waiting for an answer, if exactly
// one is.
func onlyPending(list []*replay) *replay {
	var found *replay
	for _, in := range list {
		if in.inst.State == "pending" {
			if found != nil {
				return nil
			}
			found = in
		}
	}
	return found
}

// preparationOf reads the Turn's admission off its persisted state.
//
// decision: Core persists the Turn, not its preparation, and journals no
// preparation frame, so the view shows the preparation state the Turn's
// state implies (claimed: requested; starting: starting; a started Run:
// started; cancelled before its start: released; failed before its
// start: failed) and nothing in between (daemon-protocol.txt:109).
func preparationOf(t store.Turn, started bool) Instance {
	state := "idle"
	switch {
	case started:
		state = "started"
	case t.State == store.TurnClaimed:
		state = "requested"
	case t.State == store.TurnStarting:
		state = "starting"
	case t.State == store.TurnCancelling:
		state = "releasing"
	case t.State == store.TurnCancelled && t.DeviceID != "":
		state = "released"
	case t.State == store.TurnFailed && t.DeviceID != "":
		state = "failed"
	}
	tab := machines.ByName("preparation")
	inst := Instance{Machine: "preparation", Key: t.ID, State: state, Source: "derived", Transitions: [][2]string{}}
	if sid, err := tab.ParseState(state); err == nil {
		inst.Settled = tab.State(sid).Outcome != fsm.OutcomeNone
	}
	return inst
}
