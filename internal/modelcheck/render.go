package modelcheck

import (
	"fmt"
	"strings"

	"github.com/agentwire/agentwire/fsm"
)

// Mermaid renders a violation's trace as a Mermaid sequence diagram: the
// frames as arrows at the moment they are written (a failed write crossed
// out), their arrival, timers, local events and faults as notes, and the
// violation last.
func Mermaid(v *Violation) string {
	var b strings.Builder
	b.WriteString("sequenceDiagram\n    participant C as Core\n    participant R as Runtime\n")
	who := func(r fsm.Role) string {
		if r == fsm.RoleCore {
			return "C"
		}
		return "R"
	}
	for _, a := range v.Trace {
		switch a.Kind {
		case ActSend:
			arrow := "->>"
			label := a.Type + " " + a.ID
			switch a.Fault {
			case FaultLost:
				arrow, label = "-x", label+" (write fails, frame lost)"
			case FaultDelivered:
				arrow, label = "-)", label+" (write fails, frame arrives)"
			}
			fmt.Fprintf(&b, "    %s%s%s: %s\n", who(a.Role), arrow, who(other(a.Role)), mermaidText(label+" "+a.Payload))
		case ActDeliver:
			fmt.Fprintf(&b, "    Note over %s: receives %s %s\n", who(other(a.Role)), a.Type, mermaidText(a.ID))
		case ActTimer:
			fmt.Fprintf(&b, "    Note over C,R: +%s: %s\n", a.After, mermaidText(strings.Join(a.Timers, "; ")))
		case ActLocal:
			fmt.Fprintf(&b, "    Note over %s: %s on %s/%s\n", who(a.Role), a.Event, a.Machine, mermaidText(a.Inst))
		case ActReconnect:
			b.WriteString("    Note over C,R: connection drops (frames in flight lost); a new connection starts\n")
		}
	}
	fmt.Fprintf(&b, "    Note over C,R: VIOLATED %s: %s\n", v.Invariant, mermaidText(v.Msg))
	return b.String()
}

// mermaidText keeps a label on one line and away from Mermaid's syntax.
func mermaidText(s string) string {
	r := strings.NewReplacer("\x00", "/", "\n", " ", ";", ",", "#", "", ":", " ", "{", "(", "}", ")", "\"", "'")
	s = r.Replace(s)
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// Scenario renders a trace found with Config.Sync as a peer/scenario file
// (spec/scenarios/driver format): each step a directive with the output
// the runner prints for it. Run it with scenario.Run and ReplayApp over the
// same tables to replay the counterexample through real connections.
// A step the format cannot express (a frame left in flight, a write that
// fails yet arrives, a local event on an input, whose instance ID holds a
// NUL) makes it return an error naming the step.
func Scenario(cfg Config, v *Violation) (string, error) {
	m, err := newModel(cfg)
	if err != nil {
		return "", err
	}
	if _, ok := m.byName["connection"]; ok {
		return "", fmt.Errorf("modelcheck: the scenario runner does not open the connection machine; check a composition without it")
	}
	w, err := m.initial()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Counterexample to %s (%s), found by agentwire check: %s\n", v.Invariant, v.Pos, strings.ReplaceAll(v.Msg, "\n", " "))
	for i := range v.Trace {
		a := v.Trace[i]
		if !cfg.Sync && (a.Kind == ActSend || a.Kind == ActDeliver) {
			return "", fmt.Errorf("modelcheck: step %d: the trace has frames in flight; find it with Config.Sync to replay it", i+1)
		}
		first := fsm.RoleCore
		var directive string
		switch a.Kind {
		case ActSend:
			if a.Fault == FaultDelivered {
				return "", fmt.Errorf("modelcheck: step %d: a failed write whose frame arrives is not expressible as a scenario", i+1)
			}
			first = a.Role
			if a.Fault == FaultLost {
				fmt.Fprintf(&b, "\nfail-next-write from=%s\n----\nok\n", a.Role)
			}
			directive = fmt.Sprintf("send from=%s type=%s", a.Role, a.Type)
			if a.ID != "" {
				directive += " id=" + a.ID
			}
			directive += "\n" + a.Payload
		case ActTimer:
			directive = fmt.Sprintf("advance by=%s", a.After)
		case ActLocal:
			if strings.ContainsRune(a.Inst, 0) {
				return "", fmt.Errorf("modelcheck: step %d: a local event on %s/%q cannot be named in a scenario", i+1, a.Machine, a.Inst)
			}
			first = a.Role
			directive = fmt.Sprintf("native role=%s machine=%s id=%s event=%s", a.Role, a.Machine, a.Inst, a.Event)
		case ActReconnect:
			directive = "reconnect"
		default:
			return "", fmt.Errorf("modelcheck: step %d: not expressible as a scenario", i+1)
		}
		w.trace = &[2][]string{}
		w.apply(&a)
		var out []string
		if a.Kind == ActSend && a.Fault == FaultLost {
			out = append(out, fmt.Sprintf("%s: peer: write %s failed (possibly delivered): scenario: injected write failure", a.Role, a.Type))
		}
		lines := w.trace
		w.trace = nil
		if a.Kind == ActReconnect {
			// The runner prints only that it connected; the loss it
			// performs first is not shown.
			lines = &[2][]string{{"connected"}, nil}
		}
		out = append(out, lines[dirIndex(first)]...)
		out = append(out, lines[dirIndex(other(first))]...)
		fmt.Fprintf(&b, "\n%s\n----\n", directive)
		for _, l := range out {
			b.WriteString(l + "\n")
		}
		if a.Kind == ActSend && a.Fault == FaultLost {
			b.WriteString("\nreconnect\n----\nconnected\n")
		}
	}
	return b.String(), nil
}
