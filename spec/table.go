package spec

import (
	"fmt"

	"github.com/agentwire/agentwire/fsm"
)

// Table converts a validated machine into the table the engine runs, with
// the numbering the generator uses: states, events, guards and actions in
// declaration order, messages sorted, timers in event order, all from 1.
// The generated packages hold a literal copy of exactly this table; tests
// and the model checker run a loaded (possibly deliberately broken) spec
// through the same engine without generating code.
//
// One YAML rule becomes one shared candidate, however many cells it covers.
func (m *Machine) Table() (*fsm.Table, error) {
	t := &fsm.Table{
		Name:   m.Name,
		Source: m.Pos.File,
	}
	msgID := map[string]fsm.MessageID{}
	for i, name := range m.Messages() {
		t.Messages = append(t.Messages, name)
		msgID[name] = fsm.MessageID(i + 1)
	}
	timerID := map[*Event]fsm.TimerID{}
	for _, e := range m.Timers() {
		t.Timers = append(t.Timers, fsm.TimerDecl{Name: e.Name, Duration: e.Duration, Event: fsm.EventID(e.Index + 1), Policy: e.Policy})
		timerID[e] = fsm.TimerID(len(t.Timers))
	}
	for _, s := range m.States {
		d := fsm.StateDecl{Name: s.Name, Outcome: s.Outcome}
		for _, tm := range s.Timers {
			d.Timers = append(d.Timers, timerID[tm])
		}
		t.States = append(t.States, d)
		if s.Initial {
			t.Initial = fsm.StateID(s.Index + 1)
		}
	}
	for _, e := range m.Events {
		d := fsm.EventDecl{Name: e.Name, Kind: e.Kind}
		switch e.Kind {
		case EventMessage:
			d.Message, d.Role, d.Dispatch = msgID[e.Message], e.From, e.Dispatch
			if e.FailedSend != nil {
				d.FailedSend = fsm.EventID(e.FailedSend.Index + 1)
			}
		case EventTimer:
			d.Timer, d.Role = timerID[e], e.By
		case EventLocal:
			d.Role = e.By
		}
		t.Events = append(t.Events, d)
	}
	for _, g := range m.Guards {
		t.Guards = append(t.Guards, g.Name)
	}
	for _, a := range m.Actions {
		t.Actions = append(t.Actions, a.Name)
	}

	shared := map[candidateKey]*fsm.Candidate{}
	t.Cells = make([]fsm.Cell, len(m.States)*len(m.Events))
	for _, s := range m.States {
		for _, e := range m.Events {
			rules := m.Cell(s, e)
			cell := &t.Cells[t.CellIndex(fsm.StateID(s.Index+1), fsm.EventID(e.Index+1))]
			cell.Cands = make([]*fsm.Candidate, len(rules))
			for i, r := range rules {
				c, err := candidate(r, shared, msgID, timerID)
				if err != nil {
					return nil, err
				}
				cell.Cands[i] = c
			}
		}
	}
	if err := t.Seal(); err != nil {
		return nil, err
	}
	return t, nil
}

// candidateKey identifies the cells one YAML rule expanded into that behave
// identically: a rule listing its own target among its sources is an
// internal transition there and a move elsewhere.
type candidateKey struct {
	id   string
	disp fsm.Disposition
}

func candidate(r *Rule, shared map[candidateKey]*fsm.Candidate, msgID map[string]fsm.MessageID, timerID map[*Event]fsm.TimerID) (*fsm.Candidate, error) {
	key := candidateKey{id: r.ID, disp: disposition(r)}
	if c, ok := shared[key]; ok {
		return c, nil
	}
	c := &fsm.Candidate{Rule: r.ID, Disp: key.disp, Reason: r.Reason, Line: r.Pos.Line}
	if r.Guard != nil {
		c.Guard = fsm.GuardID(r.Guard.Index + 1)
	}
	if c.Disp == fsm.Moved {
		c.To = fsm.StateID(r.To.Index + 1)
	}
	for _, ef := range r.Effects {
		fe := fsm.Effect{Kind: ef.Kind, Role: ef.Role}
		switch ef.Kind {
		case EffectSend:
			fe.Message = msgID[ef.Message]
		case EffectStart, EffectStop:
			fe.Timer = timerID[ef.Timer]
		case EffectDo:
			fe.Action = fsm.ActionID(ef.Action.Index + 1)
		case EffectRaise:
			fe.Raise = fsm.EventID(ef.Raise.Index + 1)
		default:
			return nil, fmt.Errorf("%s: effect %q has no kind", r.Pos, ef.String())
		}
		c.Effects = append(c.Effects, fe)
	}
	shared[key] = c
	return c, nil
}

func disposition(r *Rule) fsm.Disposition {
	switch {
	case r.Kind == RuleIgnore:
		return fsm.Ignored
	case r.Kind == RuleReject:
		return fsm.Rejected
	case r.Internal():
		return fsm.Stayed
	}
	return fsm.Moved
}
