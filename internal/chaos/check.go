package chaos

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/agentwire/agentwire/core/store"
)

// Evidence is everything the checker reads once every process stopped:
// Core's store, Core's frame transcripts (every process generation), the
// agents' own logs and the terminal states the public API reported while
// the run went on.
type Evidence struct {
	Turns    []TurnRecord
	Frames   []Frame
	Agent    []AgentRecord
	Observed map[string][]string // Turn ID -> terminal states the API reported, in order
	// MustComplete are the recovery Turns, run after the faults on new
	// Sessions with every process up: each must be completed ("" is one
	// that could not be created).
	MustComplete []string
}

// TurnRecord is one Turn as Core's store holds it.
type TurnRecord struct {
	Turn   store.Turn
	Events []store.Event
	Inputs []store.Input
}

// Frame is one line of a Core transcript.
type Frame struct {
	Gen     int // the Core process generation whose transcript holds it
	Device  string
	Dir     string // "in" (Runtime to Core) or "out"
	Type    string
	ID      string
	Payload json.RawMessage
}

// AgentRecord is one line of an agent's log (examples/echo-agent with
// ECHO_AGENT_LOG): what the agent process really did.
type AgentRecord struct {
	Device    string `json:"-"`
	Ev        string `json:"ev"` // start, input, decision, done
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	PID       int    `json:"pid"`
	Text      string `json:"text"`
	InputID   string `json:"input_id"`
	RequestID string `json:"request_id"`
	Approved  bool   `json:"approved"`
	Stopped   bool   `json:"stopped"`
	Failed    bool   `json:"failed"`
	Content   string `json:"content"`
}

// Violation is one property the evidence breaks.
type Violation struct {
	TurnID   string
	Property string
	Detail   string
}

func (v Violation) String() string {
	return fmt.Sprintf("turn %s: %s: %s", v.TurnID, v.Property, v.Detail)
}

// The properties, as violations name them.
const (
	PropTerminal   = "terminal"        // every Turn ends in exactly one terminal state
	PropJournal    = "journal"         // a completed Turn's journal is complete and in order
	PropReplay     = "no_replay"       // no input, initialization, transfer or mutation sent twice
	PropStartOnce  = "start_once"      // no execution_start sent twice for one Turn
	PropAgentTruth = "agent_completed" // nothing reported completed (or accepted) that the agent did not do
	PropRecovered  = "recovered"       // after the faults, a new Turn on each Environment completes
)

// honestUnknown are the failure reasons that say the native effect is
// unknown (daemon-protocol.txt:153).
var honestUnknown = map[string]bool{
	store.ReasonDeliveryUnknown:       true,
	store.ReasonEventStreamIncomplete: true,
	store.ReasonCancelUnconfirmed:     true,
}

// Check proves the chaos properties from the evidence and returns every
// violation, ordered by Turn.
func Check(e Evidence) []Violation {
	c := &checker{e: e, turnOfTag: map[string]string{}, turnOfRun: map[string]string{}}
	for _, tr := range e.Turns {
		c.turnOfTag[tagOf(firstText(tr.Turn.Input))] = tr.Turn.ID
		if tr.Turn.RunID != "" {
			c.turnOfRun[tr.Turn.RunID] = tr.Turn.ID
		}
		for _, ev := range tr.Events {
			if ev.RunID != "" {
				c.turnOfRun[ev.RunID] = tr.Turn.ID
			}
		}
	}
	c.agentByRun = map[string][]AgentRecord{}
	for _, a := range e.Agent {
		c.agentByRun[a.RunID] = append(c.agentByRun[a.RunID], a)
	}
	for _, tr := range e.Turns {
		c.terminal(tr)
		c.journal(tr)
		c.agentTruth(tr)
	}
	c.replays()
	c.starts()
	c.recovered()
	sort.SliceStable(c.out, func(i, j int) bool { return c.out[i].TurnID < c.out[j].TurnID })
	return c.out
}

type checker struct {
	e          Evidence
	turnOfTag  map[string]string
	turnOfRun  map[string]string
	agentByRun map[string][]AgentRecord
	out        []Violation
}

func (c *checker) fail(turnID, prop, format string, args ...any) {
	c.out = append(c.out, Violation{TurnID: turnID, Property: prop, Detail: fmt.Sprintf(format, args...)})
}

// terminal: the stored state is terminal, every terminal state the API
// ever reported is that one, the journal holds at most one done, and its
// events belong to one Run.
func (c *checker) terminal(tr TurnRecord) {
	t := tr.Turn
	if !t.State.Terminal() {
		c.fail(t.ID, PropTerminal, "still %s after the run ended and every process was stopped cleanly", t.State)
		return
	}
	public := t.Status().State
	for _, seen := range c.e.Observed[t.ID] {
		if seen != public {
			c.fail(t.ID, PropTerminal, "the API reported %s, the store ends %s (%s)", seen, public, t.Outcome.Reason)
			break
		}
	}
	if n := count(tr.Events, "done"); n > 1 {
		c.fail(t.ID, PropTerminal, "the journal holds %d done events", n)
	}
	runs := map[string]bool{}
	for _, ev := range tr.Events {
		if ev.RunID != "" {
			runs[ev.RunID] = true
		}
	}
	if len(runs) > 1 {
		c.fail(t.ID, PropTerminal, "the journal holds events of %d Runs %v: the Turn was executed more than once", len(runs), keys(runs))
	}
	if t.State == store.TurnCompleted && count(tr.Events, "done") == 0 {
		c.fail(t.ID, PropTerminal, "completed without a done in its journal")
	}
}

// journal: sequence numbers 1..n in order; for a completed Turn, the
// deltas numbered 1..k in order before one done, and done's content is
// the deltas joined.
func (c *checker) journal(tr TurnRecord) {
	t := tr.Turn
	for i, ev := range tr.Events {
		if ev.Seq != int64(i+1) {
			c.fail(t.ID, PropJournal, "event %d of the journal has sequence number %d", i+1, ev.Seq)
			return
		}
	}
	if t.State != store.TurnCompleted {
		return
	}
	var text strings.Builder
	next := uint64(1)
	done := -1
	for i, ev := range tr.Events {
		switch ev.Type {
		case "delta":
			var d struct {
				Delta    string `json:"delta"`
				Sequence uint64 `json:"sequence"`
			}
			if err := json.Unmarshal(ev.Payload, &d); err != nil {
				c.fail(t.ID, PropJournal, "delta at %d does not decode: %v", ev.Seq, err)
				return
			}
			if done >= 0 {
				c.fail(t.ID, PropJournal, "delta %d at %d comes after done", d.Sequence, ev.Seq)
				return
			}
			if d.Sequence != next {
				c.fail(t.ID, PropJournal, "delta at %d has sequence %d, want %d: a delta is missing or out of order", ev.Seq, d.Sequence, next)
				return
			}
			next++
			text.WriteString(d.Delta)
		case "done":
			done = i
			var d struct {
				Content string `json:"content"`
			}
			_ = json.Unmarshal(ev.Payload, &d)
			if d.Content != text.String() {
				c.fail(t.ID, PropJournal, "done's content %q is not the journaled deltas joined %q", d.Content, text.String())
			}
		}
	}
	// The agent's own account of what it said must be what Core kept.
	for _, a := range c.agentByRun[t.RunID] {
		if a.Ev == "done" && a.Content != text.String() {
			c.fail(t.ID, PropJournal, "the agent said %q, the journal holds %q", a.Content, text.String())
		}
	}
}

// agentTruth: a completed Turn's Run was completed by an agent (its done,
// not after its stdin ended, not after an error), and an input Core
// records as accepted was taken by the agent.
func (c *checker) agentTruth(tr TurnRecord) {
	t := tr.Turn
	recs := c.agentByRun[t.RunID]
	if t.State == store.TurnCompleted {
		var dones []AgentRecord
		for _, a := range recs {
			if a.Ev == "done" {
				dones = append(dones, a)
			}
		}
		switch {
		case t.RunID == "" || len(dones) == 0:
			c.fail(t.ID, PropAgentTruth, "completed, but no agent logged a done for Run %q", t.RunID)
		case len(dones) > 1:
			c.fail(t.ID, PropAgentTruth, "completed, and %d agents logged a done for Run %s", len(dones), t.RunID)
		case dones[0].Stopped || dones[0].Failed:
			c.fail(t.ID, PropAgentTruth, "completed, but the agent ended stopped=%v failed=%v", dones[0].Stopped, dones[0].Failed)
		}
	}
	took := map[string]bool{}
	for _, a := range recs {
		if a.Ev == "input" {
			took[a.InputID] = true
		}
	}
	for _, ev := range tr.Events {
		if ev.Type != "prompt_steer_ack" {
			continue
		}
		var ack struct {
			InputID  string `json:"input_id"`
			Accepted *bool  `json:"accepted"`
		}
		if json.Unmarshal(ev.Payload, &ack) == nil && ack.Accepted != nil && *ack.Accepted && !took[ack.InputID] {
			c.fail(t.ID, PropAgentTruth, "input %s is accepted in the journal, but the agent never took it", ack.InputID)
		}
	}
	if t.InputCursor > int64(len(tr.Inputs)) {
		c.fail(t.ID, PropAgentTruth, "input cursor %d is past the %d inputs stored", t.InputCursor, len(tr.Inputs))
	}
}

// replays: across every Core process, each active input is delivered at
// most once and taken by an agent at most once, and each step of a
// transfer (initialization through runtime_prepare, a workspace write) is
// sent at most once, a chunk or commit only after its own begin.
func (c *checker) replays() {
	steers := map[string]int{}
	for _, f := range c.e.Frames {
		if f.Dir == "out" && f.Type == "prompt_steer" {
			var p struct {
				InputID string `json:"input_id"`
			}
			_ = json.Unmarshal(f.Payload, &p)
			// Input IDs are unique across the run (the Turn's tag is in
			// them), so a second delivery to any Run is a replay.
			steers[p.InputID]++
			if steers[p.InputID] == 2 {
				c.fail(c.turnOfInput(p.InputID), PropReplay, "input %s was delivered again, to Run %s (Core generation %d)", p.InputID, f.ID, f.Gen)
			}
		}
	}
	taken := map[string]int{}
	for _, a := range c.e.Agent {
		if a.Ev == "input" {
			taken[a.InputID]++
			if taken[a.InputID] == 2 {
				c.fail(c.turnOfInput(a.InputID), PropReplay, "input %s reached an agent twice (device %s, Run %s)", a.InputID, a.Device, a.RunID)
			}
		}
	}
	steps := map[string]int{}
	begun := map[string]bool{}
	paths := map[string]int{}
	for _, f := range c.e.Frames {
		if f.Dir != "out" || (f.Type != "runtime_prepare" && f.Type != "workspace_write") {
			continue
		}
		var p struct {
			Step   string `json:"step"`
			Offset int64  `json:"offset"`
			Path   string `json:"path"`
		}
		_ = json.Unmarshal(f.Payload, &p)
		what := "initialization transfer"
		if f.Type == "workspace_write" {
			what = "workspace mutation"
		}
		key := fmt.Sprintf("%s/%s/%s/%d", f.Type, f.ID, p.Step, p.Offset)
		steps[key]++
		switch {
		case steps[key] == 2:
			c.fail("", PropReplay, "%s %s: step %s at offset %d sent again (Core generation %d, device %s)", what, f.ID, p.Step, p.Offset, f.Gen, f.Device)
		case p.Step == "begin":
			begun[f.Type+"/"+f.ID] = true
			// The workload writes each path once: a second mutation of it,
			// under any ID, is a write sent again.
			if f.Type == "workspace_write" {
				paths[p.Path]++
				if paths[p.Path] == 2 {
					c.fail("", PropReplay, "workspace mutation of %s begun again as %s (Core generation %d)", p.Path, f.ID, f.Gen)
				}
			}
		case !begun[f.Type+"/"+f.ID] && (p.Step == "chunk" || p.Step == "commit"):
			c.fail("", PropReplay, "%s %s: %s without its begin: an interrupted transfer resumed (Core generation %d)", what, f.ID, p.Step, f.Gen)
		}
	}
}

// starts: across every Core process, one execution_start per Turn (the
// Turn's tag starts its input), and one agent process per Turn.
func (c *checker) starts() {
	sent := map[string][]string{}
	for _, f := range c.e.Frames {
		if f.Dir == "out" && f.Type == "execution_start" {
			var p struct {
				RunID string          `json:"run_id"`
				Input json.RawMessage `json:"input"`
			}
			_ = json.Unmarshal(f.Payload, &p)
			tag := tagOf(firstText(p.Input))
			sent[tag] = append(sent[tag], fmt.Sprintf("Run %s (Core generation %d)", p.RunID, f.Gen))
		}
	}
	for _, tag := range sortedKeys(sent) {
		if tag == "" {
			// A start the checker cannot tie to a Turn would hide a second
			// start of it: the checker's own blind spot is a failure.
			c.fail("", PropStartOnce, "execution_start without a Turn tag: %s", strings.Join(sent[tag], ", "))
			continue
		}
		if len(sent[tag]) > 1 {
			c.fail(c.turnOfTag[tag], PropStartOnce, "execution_start sent %d times: %s", len(sent[tag]), strings.Join(sent[tag], ", "))
		}
	}
	started := map[string][]string{}
	for _, a := range c.e.Agent {
		if a.Ev == "start" {
			tag := tagOf(a.Text)
			started[tag] = append(started[tag], fmt.Sprintf("Run %s on %s (pid %d)", a.RunID, a.Device, a.PID))
		}
	}
	for _, tag := range sortedKeys(started) {
		if tag == "" {
			c.fail("", PropStartOnce, "an agent started without a Turn tag: %s", strings.Join(started[tag], ", "))
			continue
		}
		if len(started[tag]) > 1 {
			c.fail(c.turnOfTag[tag], PropStartOnce, "the agent was started %d times: %s", len(started[tag]), strings.Join(started[tag], ", "))
		}
	}
}

// turnOfInput is the Turn an input ID belongs to: the workload's input
// IDs are the Turn's tag and "-in1".
func (c *checker) turnOfInput(inputID string) string {
	tag, _, _ := strings.Cut(inputID, "-")
	return c.turnOfTag[tag]
}

// recovered: each recovery Turn exists and completed.
func (c *checker) recovered() {
	state := map[string]store.TurnState{}
	for _, tr := range c.e.Turns {
		state[tr.Turn.ID] = tr.Turn.State
	}
	for _, id := range c.e.MustComplete {
		switch st, ok := state[id]; {
		case id == "":
			c.fail("", PropRecovered, "a recovery Turn could not be created after the faults ended")
		case !ok:
			c.fail(id, PropRecovered, "the recovery Turn is not in the store")
		case st != store.TurnCompleted:
			c.fail(id, PropRecovered, "the recovery Turn, run with every process up and no cut, ended %s", st)
		}
	}
}

// firstText is the first text part of an ordered MessageInput (JSON).
func firstText(input json.RawMessage) string {
	var msgs []struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	_ = json.Unmarshal(input, &msgs)
	for _, m := range msgs {
		for _, p := range m.Content {
			if p.Type == "input_text" {
				return p.Text
			}
		}
	}
	return ""
}

func count(events []store.Event, typ string) int {
	n := 0
	for _, ev := range events {
		if ev.Type == typ {
			n++
		}
	}
	return n
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
