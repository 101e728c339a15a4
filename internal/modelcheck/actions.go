package modelcheck

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/internal/core/turn"
	"github.com/agentwire/agentwire/internal/peer"
)

// ActionKind is one kind of step of the composed system.
type ActionKind uint8

const (
	ActSend      ActionKind = 1 + iota // a peer writes a frame
	ActDeliver                         // the oldest frame of one direction arrives
	ActTimer                           // the clock moves to the next deadline; due timers fire
	ActLocal                           // a peer observes something locally (native work's outcome)
	ActReconnect                       // the transport drops (in-flight frames lost) and a fresh connection starts
)

// Fault is what happens to a write.
type Fault uint8

const (
	FaultNone      Fault = iota
	FaultLost            // the write fails and the frame never left
	FaultDelivered       // the write fails, yet the frame reaches the peer
)

// Action is one step of a trace. Applying the same actions to the initial
// world always gives the same world.
type Action struct {
	Kind ActionKind
	// Role is the sender (send, deliver: whose frame arrives), the peer
	// observing a local event, or unused.
	Role    fsm.Role
	Type    string
	ID      string
	Payload string // JSON
	Fault   Fault
	// Refusal marks a typed answer to a refused frame (peer.Outbound.Refusal).
	Refusal bool
	// Machine, Inst and Event name a local event.
	Machine, Inst, Event string
	// Filled in when applied, for the trace.
	Timers []string
	After  time.Duration
	Note   string
}

func (a Action) String() string {
	switch a.Kind {
	case ActSend:
		s := fmt.Sprintf("%s sends %s %s %s", a.Role, a.Type, a.ID, a.Payload)
		switch a.Fault {
		case FaultLost:
			s += " (write fails; the frame is lost)"
		case FaultDelivered:
			s += " (write fails; the frame arrives anyway)"
		}
		return s
	case ActDeliver:
		return fmt.Sprintf("%s receives %s %s", other(a.Role), a.Type, a.ID)
	case ActTimer:
		return fmt.Sprintf("after %s: %s", a.After, strings.Join(a.Timers, "; "))
	case ActLocal:
		return fmt.Sprintf("%s observes %s on %s/%s", a.Role, a.Event, a.Machine, a.Inst)
	case ActReconnect:
		return "the connection drops; a new connection starts"
	}
	return "?"
}

// frameOf builds the frame of a send action.
func frameOf(a *Action) []byte {
	b, _ := json.Marshal(struct {
		Type    string          `json:"type"`
		ID      string          `json:"id,omitempty"`
		Payload json.RawMessage `json:"payload"`
	}{a.Type, a.ID, json.RawMessage(a.Payload)})
	return b
}

// mutationID is the n-th write's mutation ID (a UUID, as the wire requires).
func mutationID(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

func exportID(n int) string { return fmt.Sprintf("00000000-0000-4000-a000-%012d", n) }

const exportBegin = `{"step":"begin","handle":"handle-1","environment_id":"3f1c2a4e-8b7d-4c6a-9e2f-1a2b3c4d5e6f"}`

func readID(n int) string { return fmt.Sprintf("00000000-0000-4000-9000-%012d", n) }

func suspendID(n int) string { return fmt.Sprintf("00000000-0000-4000-b000-%012d", n) }

const suspendedEnv = "8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c"

const readRequest = `{"handle":"handle-1","environment_id":"3f1c2a4e-8b7d-4c6a-9e2f-1a2b3c4d5e6f","path":"src/main.go","max_bytes":5}`

const writeBegin = `{"step":"begin","environment_id":"3f1c2a4e-8b7d-4c6a-9e2f-1a2b3c4d5e6f","session_id":"9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d","path":"src/main.go","size_bytes":5,"sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"}`

const (
	sessionID = "3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b"
	textInput = `[{"content":[{"type":"input_text","text":"hi"}]}]`
)

func prepareConfig(readOnly bool) string {
	if readOnly {
		return `{"session_id":"` + sessionID + `","configuration":{"agent_kind":"codex","local_environment":{"id":"8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c"},"agent_state_key":"agents-api-` + sessionID + `","workspace_read_only":true,"release_on_completion":true,"strict_resume":true}}`
	}
	return `{"session_id":"` + sessionID + `","configuration":{"agent_kind":"codex","execution_controls":{"web_search":"disabled","text_verbosity":"medium"},"agent_state_key":"agents-api-` + sessionID + `","strict_resume":true,"observe_tool_observations":true}}`
}

func num(id string) string {
	if i := strings.LastIndexByte(id, '-'); i >= 0 {
		return id[i+1:]
	}
	return id
}

func send(r fsm.Role, typ, id, payload string) Action {
	return Action{Kind: ActSend, Role: r, Type: typ, ID: id, Payload: payload}
}

// candidates lists the actions a world may take next. Sends are listed
// broadly and filtered by the sender's own driver (the table's answer in
// the sender's state), so Core and the Runtime may do anything their
// tables let them do: a correct peer is one of these behaviours.
func (w *world) candidates() []Action {
	var out []Action
	w.capped = false
	b := &w.m.cfg.Bounds
	inflight := b.InFlight
	if inflight == 0 {
		inflight = 2
	}
	if !w.broken {
		if len(w.ch[0]) < inflight {
			out = append(out, w.coreSends()...)
		}
		if len(w.ch[1]) < inflight {
			out = append(out, w.runtimeSends()...)
		}
	}
	for dir, c := range w.ch {
		if len(c) > 0 {
			from := fsm.RoleCore
			if dir == 1 {
				from = fsm.RoleRuntime
			}
			out = append(out, Action{Kind: ActDeliver, Role: from, Type: c[0].typ, ID: c[0].id})
		}
	}
	if _, ok := w.nextDeadline(); ok {
		out = append(out, Action{Kind: ActTimer})
	}
	out = append(out, w.locals()...)
	out = append(out, w.turnCancels()...)
	if w.broken || (w.faults < b.Faults && w.reconnects < b.Reconnects) {
		out = append(out, Action{Kind: ActReconnect})
	}
	// Every send may also fail, while faults remain.
	if w.m.turnOn() {
		kept := out[:0]
		for _, a := range out {
			if a.Kind != ActSend || w.turnAllows(&a) {
				kept = append(kept, a)
			}
		}
		out = kept
	}
	if w.faults < b.Faults && !w.broken {
		n := len(out)
		for i := 0; i < n; i++ {
			if out[i].Kind == ActSend {
				lost, arrived := out[i], out[i]
				lost.Fault, arrived.Fault = FaultLost, FaultDelivered
				out = append(out, lost)
				if !w.m.cfg.Sync {
					out = append(out, arrived)
				}
			}
		}
	}
	return out
}

func (w *world) coreSends() []Action {
	var out []Action
	c := w.core()
	b := &w.m.cfg.Bounds
	if _, prepared := w.m.byName["preparation"]; !prepared && w.runs < b.Runs {
		// Without the admission machine, Core starts Runs directly.
		id := "run-" + strconv.Itoa(w.runs+1)
		out = append(out, send(fsm.RoleCore, "prompt_request", id, `{"agent_kind":"codex","run_id":"`+id+`","input":`+textInput+`}`))
	} else if w.runs < b.Runs {
		id := "prepare-" + strconv.Itoa(w.runs+1)
		out = append(out, send(fsm.RoleCore, "execution_prepare", id, prepareConfig(false)))
		if b.ReadOnly {
			out = append(out, send(fsm.RoleCore, "execution_prepare", id, prepareConfig(true)))
		}
	}
	if _, ok := w.m.byName["workspace_write"]; ok && w.writes < b.Writes {
		out = append(out, send(fsm.RoleCore, "workspace_write", mutationID(w.writes+1), writeBegin))
	}
	if _, ok := w.m.byName["workspace_read"]; ok && w.reads < b.Reads {
		// Never retried: a read that broke off is unknown (its own
		// operation ID would be a second read, not a replay).
		out = append(out, send(fsm.RoleCore, "workspace_read", readID(w.reads+1), readRequest))
	}
	if _, ok := w.m.byName["suspension"]; ok && w.suspends < max(b.Suspensions, 1) {
		out = append(out, send(fsm.RoleCore, "environment_quiesce", "quiesce-"+strconv.Itoa(w.suspends+1),
			`{"environment_id":"`+suspendedEnv+`","suspend_id":"`+suspendID(w.suspends+1)+`"}`))
	}
	if _, ok := w.m.byName["workspace_export"]; ok && w.exports < b.Exports {
		out = append(out, send(fsm.RoleCore, "workspace_export", exportID(w.exports+1), exportBegin))
	}
	for _, i := range c.d.Instances() {
		if i.Terminal() {
			continue
		}
		n := num(i.Key.ID)
		switch i.Key.Machine {
		case "interaction":
			r := c.rec(i.Key)
			if r.attempts < 2 {
				dlv := `"delivery_id":"dlv-` + strconv.Itoa(r.attempts+1) + `"`
				out = append(out,
					send(fsm.RoleCore, "permission_decision", i.Key.ID, `{`+dlv+`,"approved":true}`),
					send(fsm.RoleCore, "permission_decision", i.Key.ID, `{`+dlv+`,"approved":false}`))
			}
		case "workspace_export":
			// The archive is one 5-byte chunk: next at 5 pulls past it.
			out = append(out,
				send(fsm.RoleCore, "workspace_export", i.Key.ID, `{"step":"next","offset":5}`),
				send(fsm.RoleCore, "workspace_export", i.Key.ID, `{"step":"cancel"}`))
		case "suspension":
			// A resume or a rollback, whenever the table lets Core send one
			// (an operator's, or the rollback answer_wait asks for).
			for _, rb := range []string{"false", "true"} {
				out = append(out, send(fsm.RoleCore, "environment_resume", "resume-"+num(i.Key.ID),
					`{"environment_id":"`+suspendedEnv+`","suspend_id":"`+i.Key.ID+`","rollback":`+rb+`}`))
			}
		case "workspace_write":
			out = append(out,
				send(fsm.RoleCore, "workspace_write", i.Key.ID, `{"step":"chunk","data":"aGVsbG8="}`),
				send(fsm.RoleCore, "workspace_write", i.Key.ID, `{"step":"commit"}`))
		case "preparation":
			out = append(out,
				send(fsm.RoleCore, "execution_start", i.Key.ID, `{"executor_id":"executor-`+n+`","handle":"handle-`+n+`","run_id":"run-`+n+`","input":`+textInput+`}`),
				send(fsm.RoleCore, "execution_release", i.Key.ID, `{"handle":"handle-`+n+`"}`))
		case "run":
			if c.rec(i.Key).cancel == "" {
				out = append(out, send(fsm.RoleCore, "prompt_cancel", i.Key.ID, `{"delivery_id":"cancel-`+n+`"}`))
			}
			for k := 1; k <= b.Inputs; k++ {
				in := "input-" + strconv.Itoa(k)
				key := peer.Key{Machine: "input", ID: peer.CompositeID(i.Key.ID, in)}
				if _, sent := w.dispatched[key]; sent && !w.retried(key) {
					continue
				}
				if k > 1 {
					prev := peer.Key{Machine: "input", ID: peer.CompositeID(i.Key.ID, "input-"+strconv.Itoa(k-1))}
					if pi, ok := c.d.Lookup(prev); !ok || !pi.Terminal() {
						continue // Core's cursor: the next input waits for the previous one's receipt
					}
				}
				out = append(out, send(fsm.RoleCore, "prompt_steer", i.Key.ID, `{"input_id":"`+in+`","input":`+textInput+`,"durable_receipt":true}`))
			}
		}
	}
	// Inputs Core queued for a retry are durable: Core sends them again
	// whatever connection it is on (which the tables must never ask for
	// across a reconnect).
	var queued []peer.Key
	for key := range w.dispatched {
		queued = append(queued, key)
	}
	for key := range w.retry {
		queued = append(queued, key)
	}
	sortKeys(queued)
	for _, key := range queued {
		if key.Machine != "input" || !w.retried(key) {
			continue
		}
		run, in, _ := peer.SplitCompositeID(key.ID)
		if _, ok := c.d.Lookup(peer.Key{Machine: "run", ID: run}); ok {
			continue // listed above
		}
		out = append(out, send(fsm.RoleCore, "prompt_steer", run, `{"input_id":"`+in+`","input":`+textInput+`,"durable_receipt":true}`))
	}
	return out
}

// retried reports whether Core's durable record of an input says
// keep_for_retry queued it again and it has not been sent since.
func (w *world) retried(k peer.Key) bool { return w.dispatched[k] < 0 || w.retry[k] }

func sortKeys(keys []peer.Key) {
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].Machine != keys[b].Machine {
			return keys[a].Machine < keys[b].Machine
		}
		return keys[a].ID < keys[b].ID
	})
}

func (w *world) runtimeSends() []Action {
	var out []Action
	s := w.runtime()
	b := &w.m.cfg.Bounds
	out = append(out, s.replies...)
	if _, ok := s.d.Lookup(peer.Key{Machine: "connection"}); ok {
		out = append(out, send(fsm.RoleRuntime, "heartbeat", "", `{"ts":1800000000000,"active_requests":0,"daemon_version":"0.0.1-dev"}`))
	}
	for _, i := range s.d.Instances() {
		r := s.rec(i.Key)
		if i.Terminal() && !r.owes {
			continue // a settled instance may still owe its last frame (expired after the timer)
		}
		n := num(i.Key.ID)
		switch i.Key.Machine {
		case "preparation":
			if i.StateName() == "requested" {
				// The admission itself may be refused; other rejections are
				// answers to refused frames (side.replies).
				rej := func(code string) {
					out = append(out, send(fsm.RoleRuntime, "preparation_status", i.Key.ID,
						`{"revision":0,"state":"rejected","operation":"execution_prepare","error_code":"`+code+`"}`))
				}
				rej("preparation_capacity")
				rej("invalid_configuration")
			}
			if int(r.applied) >= b.Revisions && !r.owes {
				// The bound limits what the Runtime volunteers, not what a
				// step owes; a state it cut short is not judged stuck.
				w.capped = true
				continue
			}
			rev := strconv.FormatUint(r.applied+1, 10)
			st := func(state, extra string) {
				out = append(out, send(fsm.RoleRuntime, "preparation_status", i.Key.ID,
					`{"revision":`+rev+`,"state":"`+state+`","handle":"handle-`+n+`"`+extra+`}`))
			}
			st("preparing", `,"executor_id":"executor-`+n+`"`)
			st("ready", `,"executor_id":"executor-`+n+`","expires_at":1800000300000`)
			st("starting", "")
			if r.runID != "" {
				st("started", `,"run_id":"`+r.runID+`"`)
			}
			st("released", "")
			st("expired", "")
			st("failed", `,"error_code":"preparation_failed"`)
			st("failed", `,"error_code":"cleanup_unconfirmed"`)
		case "interaction":
			out = append(out, send(fsm.RoleRuntime, "permission_cancel", i.Key.ID, `{}`))
			if r.delivery != "" {
				for _, body := range []string{`"applied":true`, `"applied":false,"error_code":"not_ready","error":"x"`, `"applied":false,"error_code":"runtime_error","error":"x"`} {
					out = append(out, send(fsm.RoleRuntime, "interaction_decision_ack", i.Key.ID, `{"delivery_id":"`+r.delivery+`",`+body+`}`))
				}
			}
		case "run":
			if _, ok := w.m.byName["interaction"]; ok {
				for k := 1; k <= b.Asks; k++ {
					out = append(out, send(fsm.RoleRuntime, "permission_request", i.Key.ID, `{"request_id":"perm-`+n+`-`+strconv.Itoa(k)+`","tool":"Bash","title":"x"}`))
				}
			}
			out = append(out,
				send(fsm.RoleRuntime, "delta", i.Key.ID, `{"delta":"x","sequence":1}`),
				send(fsm.RoleRuntime, "error", i.Key.ID, `{"error":"model request failed"}`),
				send(fsm.RoleRuntime, "done", i.Key.ID, `{"content":"x"}`))
			if r.cancel != "" {
				out = append(out,
					send(fsm.RoleRuntime, "interaction_decision_ack", i.Key.ID, `{"delivery_id":"`+r.cancel+`","applied":true}`),
					send(fsm.RoleRuntime, "interaction_decision_ack", i.Key.ID, `{"delivery_id":"`+r.cancel+`","applied":false,"error_code":"run_inactive","error":"x"}`))
			}
		case "workspace_export":
			for _, body := range []string{`{"outcome":"chunk","offset":0,"data":"aGVsbG8="}`, `{"outcome":"completed","offset":5}`,
				`{"outcome":"failed","offset":0,"error_code":"export_failed"}`, `{"outcome":"rejected","offset":0,"error_code":"resource_unavailable"}`} {
				out = append(out, send(fsm.RoleRuntime, "workspace_export_result", i.Key.ID, body))
			}
		case "suspension":
			ids := `"environment_id":"` + suspendedEnv + `","suspend_id":"` + i.Key.ID + `"`
			out = append(out,
				send(fsm.RoleRuntime, "environment_quiesced", "quiesce-"+num(i.Key.ID), `{`+ids+`,"accepted":true}`),
				send(fsm.RoleRuntime, "environment_quiesced", "quiesce-"+num(i.Key.ID), `{`+ids+`,"accepted":false,"error_code":"resource_busy"}`),
				send(fsm.RoleRuntime, "environment_resumed", "resume-"+num(i.Key.ID), `{`+ids+`,"accepted":true}`),
				send(fsm.RoleRuntime, "environment_resumed", "resume-"+num(i.Key.ID), `{`+ids+`,"accepted":false,"error_code":"not_suspended"}`))
		case "workspace_read":
			for _, body := range []string{`{"outcome":"completed","data":"aGVsbG8=","close_acknowledged":true}`,
				`{"outcome":"completed","data":"aGVsbG8=","truncated":true,"close_acknowledged":true}`,
				`{"outcome":"rejected","error_code":"not_found"}`, `{"outcome":"unknown","error_code":"read_unconfirmed"}`} {
				out = append(out, send(fsm.RoleRuntime, "workspace_read_result", i.Key.ID, body))
			}
		case "workspace_write":
			for _, body := range []string{`{"outcome":"ready"}`, `{"outcome":"received","offset":5}`, `{"outcome":"completed","size_bytes":5}`,
				`{"outcome":"rejected","error_code":"write_capacity"}`, `{"outcome":"unknown","error_code":"write_unconfirmed"}`} {
				out = append(out, send(fsm.RoleRuntime, "workspace_write_result", i.Key.ID, body))
			}
		case "input":
			run, in, _ := peer.SplitCompositeID(i.Key.ID)
			ack := func(body string) {
				out = append(out, send(fsm.RoleRuntime, "prompt_steer_ack", run, `{"input_id":"`+in+`",`+body+`}`))
			}
			ack(`"accepted":false,"written":true`)
			ack(`"accepted":true`)
			ack(`"accepted":false,"error_code":"busy","error":"x"`)
			ack(`"accepted":false,"error_code":"invalid_input","error":"x"`)
			ack(`"accepted":false,"error_code":"outcome_unknown","error":"x"`)
		}
	}
	return out
}

// locals lists the local events each side may observe: native work's
// outcomes, and Core's own observations. Connection loss and failed
// writes are not among them: faults and the driver fire those.
func (w *world) locals() []Action {
	var out []Action
	for _, s := range w.sides {
		for _, i := range s.d.Instances() {
			if i.Terminal() {
				continue
			}
			t := i.Table()
			for e := range t.Events {
				ev := &t.Events[e]
				if ev.Kind != fsm.EventLocal || !s.role.Performs(ev.Role) || w.m.excluded[t.Name][ev.Name] {
					continue
				}
				if !movable(t, i.State(), fsm.EventID(e+1)) {
					continue
				}
				out = append(out, Action{Kind: ActLocal, Role: s.role, Machine: t.Name, Inst: i.Key.ID, Event: ev.Name})
			}
		}
	}
	return out
}

// movable reports whether some candidate of the cell does something (an
// ignore or a reject changes nothing, so it is not worth a branch).
func movable(t *fsm.Table, s fsm.StateID, e fsm.EventID) bool {
	for _, c := range t.Cells[t.CellIndex(s, e)].Cands {
		if c.Disp == fsm.Moved || c.Disp == fsm.Stayed {
			return true
		}
	}
	return false
}

// apply performs a on w, reporting false when a is not possible there (the
// sender's table refuses the frame, nothing is in flight, …).
func (w *world) apply(a *Action) bool {
	switch a.Kind {
	case ActSend:
		return w.applySend(a)
	case ActDeliver:
		return w.applyDeliver(a)
	case ActTimer:
		at, ok := w.nextDeadline()
		if !ok {
			return false
		}
		a.After = at.Sub(w.clock.Now())
		a.Timers = w.dueTimers(at)
		w.clock.Advance(a.After)
		w.core().d.Tick()
		w.runtime().d.Tick()
	case ActLocal:
		if a.Machine == turnMachine {
			before := w.turnState(a.Inst)
			w.fireTurn(a.Inst, turn.Cancel)
			if w.turnState(a.Inst) == before {
				return false
			}
			break
		}
		s := w.sideOf(a.Role)
		t := w.m.byName[a.Machine]
		e, err := t.ParseEvent(a.Event)
		if err != nil {
			return false
		}
		before := w.stateOf(s, a.Machine, a.Inst)
		if err := s.d.Local(peer.Key{Machine: a.Machine, ID: a.Inst}, e, nil); err != nil && before == w.stateOf(s, a.Machine, a.Inst) {
			return false
		}
	case ActReconnect:
		if !w.broken {
			w.faults++
		}
		w.reconnects++
		w.disconnect()
		if err := w.connect(); err != nil {
			panic(err)
		}
	}
	w.afterAction()
	return true
}

func (w *world) stateOf(s *side, machine, id string) string {
	if i, ok := s.d.Lookup(peer.Key{Machine: machine, ID: id}); ok {
		return i.StateName()
	}
	return ""
}

// canSend asks the sender's driver whether its table accepts the frame
// now, without sending it: a write handed out and never reported changes
// nothing.
func (w *world) canSend(a *Action) bool {
	s := w.sideOf(a.Role)
	msg, err := w.m.decode(frameOf(a), a.Role)
	if err != nil {
		panic(fmt.Sprintf("modelcheck: a candidate frame does not decode: %v: %s", err, frameOf(a)))
	}
	s.d.Send(peer.Outbound{ID: msg.ID, Payload: msg.Payload, Refusal: a.Refusal}, nil)
	_, ok := s.d.NextWrite()
	return ok
}

func (w *world) applySend(a *Action) bool {
	s := w.sideOf(a.Role)
	frame := frameOf(a)
	msg, err := w.m.decode(frame, a.Role)
	if err != nil {
		panic(fmt.Sprintf("modelcheck: a candidate frame does not decode: %v: %s", err, frame))
	}
	s.d.Send(peer.Outbound{ID: msg.ID, Payload: msg.Payload, Refusal: a.Refusal}, nil)
	wr, ok := s.d.NextWrite()
	if !ok {
		return false
	}
	if a.Refusal {
		for n, r := range s.replies {
			if r.Type == a.Type && r.ID == a.ID && r.Payload == a.Payload {
				s.replies = append(s.replies[:n:n], s.replies[n+1:]...)
				break
			}
		}
	}
	w.checkReplay(s, msg)
	w.turnSent(a) // the API's cancel comes before the frame, whatever its write does
	if (a.Type == "execution_prepare" && a.ID == "prepare-"+strconv.Itoa(w.runs+1)) || (a.Type == "prompt_request" && a.ID == "run-"+strconv.Itoa(w.runs+1)) {
		w.runs++
	}
	if a.Type == "workspace_write" && a.ID == mutationID(w.writes+1) {
		w.writes++
	}
	if a.Type == "workspace_read" && a.ID == readID(w.reads+1) {
		w.reads++
	}
	if a.Type == "workspace_export" && a.ID == exportID(w.exports+1) && strings.Contains(a.Payload, `"begin"`) {
		w.exports++
	}
	if a.Type == "environment_quiesce" && strings.Contains(a.Payload, suspendID(w.suspends+1)) {
		w.suspends++
	}
	if a.Fault == FaultNone {
		w.remember(s, msg)
		w.effective = false
		s.d.Written(wr, nil)
		if !w.effective && !a.Refusal {
			// A peer sends what its own table acts on, or what a step owes:
			// a frame its own copy ignores is not a behaviour worth a branch.
			return false
		}
	} else {
		s.d.Written(wr, errInjected)
		w.faults++
		w.broken = true
	}
	if a.Fault != FaultLost {
		w.ch[dirIndex(a.Role)] = append(w.ch[dirIndex(a.Role)], inflight{frame: wr.Frame, typ: a.Type, id: a.ID})
	}
	if w.m.cfg.Sync {
		// peer/scenario's semantics: the frame arrives before anything else
		// happens, and a failed write takes the connection down with it.
		if a.Fault != FaultLost {
			w.applyDeliver(&Action{Kind: ActDeliver, Role: a.Role})
		}
		if a.Fault != FaultNone {
			w.reconnects++
			w.disconnect()
			if err := w.connect(); err != nil {
				panic(err)
			}
		}
	}
	w.afterAction()
	return true
}

func (w *world) applyDeliver(a *Action) bool {
	dir := dirIndex(a.Role)
	if len(w.ch[dir]) == 0 {
		return false
	}
	f := w.ch[dir][0]
	w.ch[dir] = w.ch[dir][1:]
	msg, err := w.m.decode(f.frame, a.Role)
	if err != nil {
		panic(err)
	}
	to := w.sideOf(other(a.Role))
	w.remember(to, msg)
	_ = to.d.DeliverMessage(msg)
	if to.role == fsm.RoleCore {
		// Core's reader notes every frame for the read deadline.
		if t, ok := w.m.byName["connection"]; ok {
			if e, err := t.ParseEvent("frame_received"); err == nil {
				if i, ok := to.d.Lookup(peer.Key{Machine: "connection"}); ok && !i.Terminal() {
					_ = to.d.Local(i.Key, e, nil)
				}
			}
		}
	}
	w.afterAction()
	return true
}

// disconnect drops the transport: in-flight frames are lost, and both
// sides fire connection loss on every instance. The instances stay
// visible to the invariants as the past.
func (w *world) disconnect() {
	w.ch = [2][]inflight{}
	for _, s := range w.sides {
		s.d.ConnectionLost()
		w.closeInteractions(s, s.d, "")
	}
	for n, s := range w.sides {
		for _, i := range s.d.Instances() {
			if i.Key.Machine == "connection" {
				continue
			}
			if durable(i.Key.Machine) && !i.Terminal() {
				// It goes on on the next connection, not into the past.
				w.carried[n] = append(w.carried[n], carried{saved: s.d.Save(i), rec: s.rec(i.Key).clone()})
				continue
			}
			held := uint32(0)
			if r := s.recs[i.Key]; r != nil {
				held = r.held
			}
			w.past = append(w.past, past{role: s.role, key: i.Key, state: i.StateName(), outcome: i.Outcome(), held: held})
		}
	}
	w.checkPast()
}

func (w *world) afterAction() {
	if !w.broken && w.settledConnection() {
		w.broken = true
	}
}
