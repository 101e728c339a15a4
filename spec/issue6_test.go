package spec

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIssue6Fixes pins each correction of issue 6 that no general check
// covers: every case must fail on the table as it was (testdata/today) and
// hold on the one in spec/. Each machine is loaded on its own, without the
// catalog; a table that does not load at all counts as not fixed.
func TestIssue6Fixes(t *testing.T) {
	load := func(t *testing.T, path, machine string) *Machine {
		t.Helper()
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		model, err := Load(map[string][]byte{machine + ".yaml": b})
		if err != nil {
			return nil
		}
		m, _ := model.Machine(machine)
		return m
	}
	for _, c := range []struct {
		name, machine string
		fixed         func(m *Machine) bool
	}{
		{"item 4: a rejected start leaves the handle ready, and a ready handle can be released", "preparation", func(m *Machine) bool {
			r := sel(m, "starting", "status_rejected", "rejects_start")
			return r != nil && r.Kind == RuleGoto && r.To.Name == "ready" && to(m, "ready", "execution_release") == "releasing"
		}},
		{"item 5: one instance per physical connection, replaced by a newer one", "connection", func(m *Machine) bool {
			return to(m, "live", "superseded") == "replaced" && to(m, "upgraded", "superseded") == "replaced"
		}},
		{"item 5: the upgrade checks parameters, then the version, then the credential", "connection", func(m *Machine) bool {
			var guards []string
			for _, r := range cell(m, "idle", "upgrade_requested") {
				if r.Guard != nil {
					guards = append(guards, r.Guard.Name)
				}
			}
			return assert.ObjectsAreEqual([]string{"params_missing", "version_mismatch", "credential_refused"}, guards)
		}},
		{"item 6: a late input receipt still settles the input", "input", func(m *Machine) bool {
			return to(m, to(m, "sent", "written_wait"), "ack_accepted") == "accepted"
		}},
		{"item 6: a late decision receipt still settles the interaction", "interaction", func(m *Machine) bool {
			r := sel(m, to(m, "deciding", "ack_wait"), "ack_applied", "current_delivery")
			return r != nil && r.Kind == RuleGoto && r.To.Name == "applied"
		}},
		{"item 6: a late cancellation receipt still settles the Run", "run", func(m *Machine) bool {
			r := sel(m, to(m, "cancelling", "cancel_wait"), "cancel_ack_applied", "matches_cancel_delivery")
			return r != nil && r.Kind == RuleGoto && r.To.Name == "cancelled"
		}},
		{"item 7: a closed subscription replaces a start's delivery_unknown", "run", func(m *Machine) bool {
			return to(m, to(m, "idle", "send_failed"), "subscription_overflow") == "incomplete"
		}},
		{"item 9: the reservation is released before the result is delivered", "workspace_read", func(m *Machine) bool {
			ok := false
			for _, r := range m.Rules {
				released := false
				for _, ef := range r.Effects {
					if ef.Kind != EffectDo {
						continue
					}
					switch ef.Action.Name {
					case "release_reservation":
						released = true
					case "deliver_result":
						if !released {
							return false
						}
						ok = true
					}
				}
			}
			return ok
		}},
		{"defect: an input already written is never retried", "input", func(m *Machine) bool {
			afterWrite := reachableFrom(m, "written")
			for _, r := range m.Rules {
				if r.Event.Name == "ack_rejected" && r.Guard != nil && r.Guard.Name == "retryable_code" && afterWrite[r.From.Name] {
					return false
				}
			}
			return afterWrite["settling"]
		}},
		{"defect: only preparation_capacity leaves the Turn unclaimed", "preparation", func(m *Machine) bool {
			seen := false
			for _, r := range m.Rules {
				for _, ef := range r.Effects {
					if ef.Kind == EffectDo && ef.Action.Name == "leave_turn_unclaimed" {
						seen = true
						if r.Guard == nil || r.Guard.Name != "capacity_refusal" {
							return false
						}
					}
				}
			}
			return seen
		}},
		// An input whose native write or written receipt still runs gets
		// the drain; one already written settles unknown at once, since no
		// acceptance can come after the Turn settled (make chaos found the
		// drain there making applied cancellations late, issue 23).
		{"defect: an input in flight when the Run completes gets the drain", "input", func(m *Machine) bool {
			for _, from := range []string{"sent", "write_complete"} {
				s, ok := stateNamed(m, to(m, from, "run_completing"))
				if !ok || len(s.Timers) != 1 || s.Timers[0].Name != "drain_wait" {
					return false
				}
			}
			s, ok := stateNamed(m, to(m, "written", "run_completing"))
			return ok && s.Terminal()
		}},
		{"defect: an overflow while the connection is up keeps waiting for the cancellation receipt", "run", func(m *Machine) bool {
			s, ok := stateNamed(m, to(m, "cancelling", "subscription_overflow"))
			return ok && !s.Terminal()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := load(t, "testdata/today/"+c.machine+".yaml", c.machine)
			assert.False(t, before != nil && c.fixed(before), "the table before issue 6 already passes: the test cannot fail")
			after := load(t, c.machine+".yaml", c.machine)
			require.NotNil(t, after, "spec/%s.yaml loads on its own", c.machine)
			assert.True(t, c.fixed(after))
		})
	}
}

func stateNamed(m *Machine, name string) (*State, bool) {
	for _, s := range m.States {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

func eventNamed(m *Machine, name string) (*Event, bool) {
	for _, e := range m.Events {
		if e.Name == name {
			return e, true
		}
	}
	return nil, false
}

func cell(m *Machine, state, event string) []*Rule {
	s, ok := stateNamed(m, state)
	e, ok2 := eventNamed(m, event)
	if !ok || !ok2 {
		return nil
	}
	return m.Cell(s, e)
}

// sel is the candidate of (state, event) when only the named guard holds.
func sel(m *Machine, state, event, guard string) *Rule {
	s, ok := stateNamed(m, state)
	e, ok2 := eventNamed(m, event)
	if !ok || !ok2 {
		return nil
	}
	return m.Select(s, e, func(g *Guard) bool { return g.Name == guard })
}

// to is where the unguarded fallback of (state, event) goes, or "" when it
// does not move the machine.
func to(m *Machine, state, event string) string {
	c := cell(m, state, event)
	if len(c) == 0 || c[len(c)-1].Kind != RuleGoto {
		return ""
	}
	return c[len(c)-1].To.Name
}

func reachableFrom(m *Machine, state string) map[string]bool {
	seen := map[string]bool{state: true}
	queue := []string{state}
	for len(queue) > 0 {
		s, _ := stateNamed(m, queue[0])
		queue = queue[1:]
		for _, e := range m.Events {
			for _, r := range m.Cell(s, e) {
				if r.Kind == RuleGoto && !seen[r.To.Name] {
					seen[r.To.Name] = true
					queue = append(queue, r.To.Name)
				}
			}
		}
	}
	return seen
}
