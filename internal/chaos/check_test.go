package chaos

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
)

// good is the evidence of one Turn that completed as it should: its
// start sent once, two deltas and done journaled in order, an input
// accepted, and the agent's log saying the same.
func good() Evidence {
	input := json.RawMessage(`[{"content":[{"type":"input_text","text":"t0001 hello"}]}]`)
	ev := func(seq int64, typ, payload string) store.Event {
		return store.Event{TurnID: "turn-1", Seq: seq, RunID: "run-1", Type: typ, Payload: json.RawMessage(payload)}
	}
	return Evidence{
		Turns: []TurnRecord{{
			Turn: store.Turn{ID: "turn-1", SessionID: "ses-1", Input: input, State: store.TurnCompleted, RunID: "run-1", InputCursor: 1},
			Events: []store.Event{
				ev(1, "delta", `{"delta":"t0001 ","sequence":1}`),
				ev(2, "prompt_steer", `{"input_id":"t0001-in1"}`),
				ev(3, "prompt_steer_ack", `{"input_id":"t0001-in1","accepted":true}`),
				ev(4, "delta", `{"delta":"hello","sequence":2}`),
				ev(5, "done", `{"content":"t0001 hello"}`),
			},
			Inputs: []store.Input{{TurnID: "turn-1", Seq: 1, ID: "t0001-in1"}},
		}},
		Frames: []Frame{
			{Gen: 1, Device: "dev-1", Dir: "out", Type: "runtime_prepare", ID: "xfer-1", Payload: json.RawMessage(`{"step":"begin"}`)},
			{Gen: 1, Device: "dev-1", Dir: "out", Type: "runtime_prepare", ID: "xfer-1", Payload: json.RawMessage(`{"step":"chunk"}`)},
			{Gen: 1, Device: "dev-1", Dir: "out", Type: "runtime_prepare", ID: "xfer-1", Payload: json.RawMessage(`{"step":"commit"}`)},
			{Gen: 1, Device: "dev-1", Dir: "out", Type: "execution_start", ID: "prep-1",
				Payload: json.RawMessage(`{"run_id":"run-1","input":[{"content":[{"type":"input_text","text":"t0001 hello"}]}]}`)},
			{Gen: 1, Device: "dev-1", Dir: "out", Type: "prompt_steer", ID: "run-1", Payload: json.RawMessage(`{"input_id":"t0001-in1"}`)},
		},
		Agent: []AgentRecord{
			{Device: "dev-1", Ev: "start", RunID: "run-1", Text: "t0001 hello", PID: 10},
			{Device: "dev-1", Ev: "input", RunID: "run-1", InputID: "t0001-in1"},
			{Device: "dev-1", Ev: "done", RunID: "run-1", Content: "t0001 hello"},
		},
		Observed: map[string][]string{"turn-1": {"completed"}},
	}
}

func TestCheckPassesGoodEvidence(t *testing.T) {
	assert.Empty(t, Check(good()))
}

// Each case spoils the good evidence in one way; the checker must name
// the property it breaks, on the Turn.
func TestCheckFindsEachViolation(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(e *Evidence)
		prop  string
		turn  string
	}{
		{"a Turn the API reported completed that the store ends failed", func(e *Evidence) {
			e.Turns[0].Turn.State = store.TurnFailed
			e.Turns[0].Turn.Outcome.Reason = store.ReasonEventStreamIncomplete
		}, PropTerminal, "turn-1"},
		{"a Turn with two done events", func(e *Evidence) {
			e.Turns[0].Events = append(e.Turns[0].Events, store.Event{TurnID: "turn-1", Seq: 6, RunID: "run-1", Type: "done", Payload: json.RawMessage(`{"content":"t0001 hello"}`)})
		}, PropTerminal, "turn-1"},
		{"a Turn left running", func(e *Evidence) {
			e.Turns[0].Turn.State = store.TurnRunning
			e.Observed = nil
		}, PropTerminal, "turn-1"},
		{"a Turn whose journal holds events of two Runs", func(e *Evidence) {
			e.Turns[0].Events[0].RunID = "run-0"
		}, PropTerminal, "turn-1"},
		{"execution_start sent twice for one Turn", func(e *Evidence) {
			again := e.Frames[3]
			again.Gen = 2
			e.Frames = append(e.Frames, again)
		}, PropStartOnce, "turn-1"},
		{"the agent started twice for one Turn", func(e *Evidence) {
			e.Agent = append(e.Agent, AgentRecord{Device: "dev-2", Ev: "start", RunID: "run-9", Text: "t0001 hello", PID: 11})
		}, PropStartOnce, "turn-1"},
		{"a completed Turn the agent never completed", func(e *Evidence) {
			e.Agent = e.Agent[:2]
		}, PropAgentTruth, "turn-1"},
		{"a completed Turn whose agent was stopped", func(e *Evidence) {
			e.Agent[2].Stopped = true
		}, PropAgentTruth, "turn-1"},
		{"an input accepted that the agent never took", func(e *Evidence) {
			e.Agent = append(e.Agent[:1], e.Agent[2])
		}, PropAgentTruth, "turn-1"},
		{"an out-of-order journal: deltas swapped", func(e *Evidence) {
			evs := e.Turns[0].Events
			evs[0].Payload, evs[3].Payload = evs[3].Payload, evs[0].Payload
		}, PropJournal, "turn-1"},
		{"a journal with a gap in its sequence numbers", func(e *Evidence) {
			e.Turns[0].Events[2].Seq = 7
		}, PropJournal, "turn-1"},
		{"a delta missing from a completed Turn's journal", func(e *Evidence) {
			evs := e.Turns[0].Events
			e.Turns[0].Events = append(evs[:3:3], store.Event{TurnID: "turn-1", Seq: 4, RunID: "run-1", Type: "done", Payload: json.RawMessage(`{"content":"t0001 hello"}`)})
		}, PropJournal, "turn-1"},
		{"a delta after done", func(e *Evidence) {
			evs := e.Turns[0].Events
			evs[3].Type, evs[4].Type = evs[4].Type, evs[3].Type
			evs[3].Payload, evs[4].Payload = evs[4].Payload, evs[3].Payload
		}, PropJournal, "turn-1"},
		{"the agent said something the journal does not hold", func(e *Evidence) {
			e.Agent[2].Content = "t0001 hello world"
		}, PropJournal, "turn-1"},
		{"an input delivered twice", func(e *Evidence) {
			e.Frames = append(e.Frames, e.Frames[4])
		}, PropReplay, "turn-1"},
		{"an input that reached the agent twice", func(e *Evidence) {
			e.Agent = append(e.Agent, e.Agent[1])
		}, PropReplay, "turn-1"},
		{"an initialization chunk sent twice", func(e *Evidence) {
			e.Frames = append(e.Frames, e.Frames[1])
		}, PropReplay, ""},
		{"a workspace write sent again under a new mutation ID", func(e *Evidence) {
			e.Frames = append(e.Frames,
				Frame{Gen: 1, Dir: "out", Type: "workspace_write", ID: "mut-1", Payload: json.RawMessage(`{"step":"begin","path":"chaos/t0001.txt"}`)},
				Frame{Gen: 2, Dir: "out", Type: "workspace_write", ID: "mut-2", Payload: json.RawMessage(`{"step":"begin","path":"chaos/t0001.txt"}`)})
		}, PropReplay, ""},
		{"an input delivered again to another Run", func(e *Evidence) {
			again := e.Frames[4]
			again.ID = "run-2"
			e.Frames = append(e.Frames, again)
		}, PropReplay, "turn-1"},
		{"a transfer resumed without its begin", func(e *Evidence) {
			e.Frames = append(e.Frames, Frame{Gen: 2, Dir: "out", Type: "workspace_write", ID: "mut-1", Payload: json.RawMessage(`{"step":"commit"}`)})
		}, PropReplay, ""},
		{"a recovery Turn that did not complete", func(e *Evidence) {
			e.Turns[0].Turn.State = store.TurnFailed
			e.Turns[0].Turn.Outcome.Reason = store.ReasonEventStreamIncomplete
			e.Observed = nil
			e.MustComplete = []string{"turn-1"}
		}, PropRecovered, "turn-1"},
		{"a recovery Turn that could not be created", func(e *Evidence) {
			e.MustComplete = []string{""}
		}, PropRecovered, ""},
		{"an execution_start the checker cannot tie to a Turn", func(e *Evidence) {
			e.Frames[3].Payload = json.RawMessage(`{"run_id":"run-1","input":[]}`)
		}, PropStartOnce, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := good()
			tc.spoil(&e)
			got := Check(e)
			require.NotEmpty(t, got, "the checker missed it")
			var props []string
			for _, v := range got {
				props = append(props, v.Property)
				if v.Property == tc.prop {
					assert.Equal(t, tc.turn, v.TurnID, "%v", v)
				}
			}
			assert.Contains(t, props, tc.prop, "%v", got)
		})
	}
}

// A failed Turn whose outcome is unknown needs no done and no agent
// completion: honestly unknown is a legitimate end.
func TestCheckAcceptsHonestlyUnknown(t *testing.T) {
	e := good()
	e.Turns[0].Turn.State = store.TurnFailed
	e.Turns[0].Turn.Outcome.Reason = store.ReasonEventStreamIncomplete
	e.Turns[0].Events = e.Turns[0].Events[:4]
	e.Agent = e.Agent[:2]
	e.Observed = map[string][]string{"turn-1": {"failed", "failed"}}
	assert.Empty(t, Check(e))
}

func TestReportPrintsTheSeedOfAViolation(t *testing.T) {
	r := Result{ByState: map[string]int{"completed": 1}, Kills: map[string]int{}, Violations: []Violation{{TurnID: "turn-1", Property: PropStartOnce, Detail: "twice"}}}
	var b strings.Builder
	r.Report(&b, 42)
	assert.Contains(t, b.String(), "VIOLATION (seed 42) turn turn-1: start_once: twice")
	assert.Contains(t, b.String(), "replay with: make chaos SEED=42")
}
