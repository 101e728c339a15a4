package spec

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// replyRef keeps a result type's replies_to until every message is known.
type replyRef struct {
	msg  *Message
	node *yaml.Node // replies_to
}

// answers reads replies_to and answers of a result type: which outcome may
// answer which step of the request. Declared once here, it feeds both the
// wire validator (generated into the catalog table) and checkAnswers.
func (d *decoder) answers(n, repliesTo, answers *yaml.Node, msg *Message) replyRef {
	if repliesTo == nil || answers == nil {
		d.errs.add(d.pos(n), "message %q: replies_to and answers go together", msg.Type)
		return replyRef{}
	}
	if answers.Kind != yaml.MappingNode || len(answers.Content) == 0 {
		d.errs.add(d.pos(answers), "answers of %q must map each outcome to the request steps it may answer", msg.Type)
		return replyRef{}
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(answers.Content); i += 2 {
		k, v := answers.Content[i], answers.Content[i+1]
		if !identRE.MatchString(k.Value) {
			d.errs.add(d.pos(k), "outcome %q must be lower_snake_case", k.Value)
			continue
		}
		if seen[k.Value] {
			d.errs.add(d.pos(k), "answers of %q lists outcome %q twice", msg.Type, k.Value)
			continue
		}
		seen[k.Value] = true
		a := Answer{Outcome: k.Value}
		for _, sn := range d.names(v, "answers") {
			if !identRE.MatchString(sn.Value) {
				d.errs.add(d.pos(sn), "step %q must be lower_snake_case", sn.Value)
				continue
			}
			a.Steps = append(a.Steps, sn.Value)
		}
		msg.Answers = append(msg.Answers, a)
	}
	return replyRef{node: repliesTo}
}

// resolveReplies links each result type to the request it answers: a type
// of the other direction with the same identity.
func (d *decoder) resolveReplies(refs []replyRef, types map[string]*Message) {
	for _, r := range refs {
		name, _ := d.str(r.node, "replies_to")
		req, ok := types[name]
		switch {
		case !ok:
			d.errs.add(d.pos(r.node), "message %q replies to unknown message type %q", r.msg.Type, name)
		case req.From == r.msg.From:
			d.errs.add(d.pos(r.node), "message %q replies to %q, which the same peer (%s) sends", r.msg.Type, name, req.From)
		case req.ID != r.msg.ID:
			d.errs.add(d.pos(r.node), "message %q replies to %q, which carries identity %q, not %q", r.msg.Type, name, req.ID.Name, r.msg.ID.Name)
		default:
			r.msg.RepliesTo = req
		}
	}
}

// checkWireObligations makes the declarations the protocol checks read
// required of every machine of a protocol spec (a directory with a
// catalog): every message event says what its sender's failed send means,
// every wire type a machine sends is one of its message events (so the
// sender fires it, or its failed send, when the write returns), and a
// machine with an unknown terminal names the requests that dispatch its
// effect.
func checkWireObligations(c *Catalog, model *Model, errs *errorList) {
	for _, m := range model.Machines {
		for _, e := range m.Events {
			if e.Kind == EventMessage && e.FailedSend == nil {
				errs.add(e.Pos, "message event %q declares no failed_send: name the local event its sender (%s) fires when the write of %s fails; the frame may have left, so it counts as possibly delivered", e.Name, e.From, e.Message)
			}
		}
		for _, r := range m.Rules {
			for _, ef := range r.Effects {
				if ef.Kind != EffectSend {
					continue
				}
				msg, ok := c.Message(ef.Message)
				if !ok {
					continue // reported by checkCatalogAgainstMachines
				}
				found := false
				for _, e := range m.Events {
					found = found || (e.Kind == EventMessage && e.Message == msg.Type && e.From == msg.From)
				}
				if !found {
					errs.add(r.Pos, "effect %q sends %s, but %s declares no event for it: the sender fires that event (or its failed_send) when the write returns", ef.String(), msg.Type, m.Name)
				}
			}
		}
		unknown, dispatch := false, false
		for _, s := range m.States {
			unknown = unknown || s.Outcome == OutcomeUnknown
		}
		for _, e := range m.Events {
			dispatch = dispatch || e.Dispatch
		}
		if unknown && !dispatch {
			errs.add(m.Pos, "machine %q has an unknown terminal but no dispatch event: mark the request(s) whose effect an unknown outcome leaves open with dispatch: true", m.Name)
		}
	}
}

// checkAnswers: a result outcome may only settle a machine where a request
// step it answers was sent (or its send attempted) on every path there.
// For each machine that both the request and its result drive by key, the
// catalog's answers table is checked against every rule the outcome's event
// moves in. Every outcome the machine hears must be in the table, and
// every step it names must be a step the machine sends.
func checkAnswers(c *Catalog, errs *errorList) {
	for _, res := range c.Messages {
		req := res.RepliesTo
		if req == nil {
			continue
		}
		for _, rd := range res.Drives {
			m := rd.Machine
			var qd *Drive
			for _, x := range req.Drives {
				if x.Machine == m && x.By != "" {
					qd = x
				}
			}
			if rd.By == "" || qd == nil {
				continue
			}
			for _, k := range rd.Keyed {
				var steps []string
				declared := false
				for _, a := range res.Answers {
					if a.Outcome == k.Value {
						steps, declared = a.Steps, true
					}
				}
				if !declared {
					errs.add(rd.Pos, "%s drives %s on outcome %q, which answers of %s does not list", res.Type, m.Name, k.Value, res.Type)
					continue
				}
				sent := map[*Event]bool{}
				for _, st := range steps {
					e := qd.EventFor(st)
					if e == nil {
						errs.add(res.Pos, "answers of %s: outcome %q answers step %q, which %s does not drive %s with", res.Type, k.Value, st, req.Type, m.Name)
						continue
					}
					sent[e] = true
				}
				if len(sent) == 0 {
					continue
				}
				before := reachableWithout(m, sent)
				for _, s := range m.States {
					for _, r := range m.Cell(s, k.Event) {
						if r.Kind == RuleGoto && before[s.Index] {
							errs.add(r.Pos, "(%s, %s) accepts %s outcome %q, but %q is reachable before any %s step it answers (%s, per %s answers) was sent", s.Name, k.Event.Name, res.Type, k.Value, s.Name, req.Type, joinSteps(steps), c.Pos.File)
						}
					}
				}
			}
		}
	}
}

func joinSteps(steps []string) string { return strings.Join(steps, ", ") }
