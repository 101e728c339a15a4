package exec

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Lines the adapter writes on stdin (docs/exec-adapter.md).
type (
	inputLine struct {
		Type      string            `json:"type"` // "input"
		RunID     string            `json:"run_id"`
		SessionID string            `json:"session_id,omitempty"`
		Input     wire.MessageInput `json:"input"`
		options
	}
	steerLine struct {
		Type    string            `json:"type"` // "prompt_steer"
		InputID string            `json:"input_id"`
		Input   wire.MessageInput `json:"input"`
	}
	permissionLine struct {
		Type         string          `json:"type"`
		RequestID    string          `json:"request_id"`
		Approved     bool            `json:"approved"`
		Message      string          `json:"message,omitempty"`
		UpdatedInput json.RawMessage `json:"updated_input,omitempty"`
	}
	choiceLine struct {
		Type            string                  `json:"type"`
		AskID           string                  `json:"ask_id"`
		QuestionAnswers []wire.UserChoiceAnswer `json:"question_answers,omitempty"`
		Cancelled       bool                    `json:"cancelled,omitempty"`
		Reason          string                  `json:"reason,omitempty"`
	}
	resultLine struct {
		Type    string              `json:"type"`
		CallID  string              `json:"call_id"`
		Success bool                `json:"success"`
		Content []wire.InputContent `json:"content"`
	}
)

// options are the members of the configuration the agent acts on
// (docs/exec-adapter.md): the native Session the Turn continues (the agent
// owns its native Sessions, so it decides whether it can resume or recover
// one, and fails the Turn when it cannot, daemon-protocol.txt:60, :165),
// and whether Core observes tool observations (daemon-protocol.txt:55).
type options struct {
	AgentSessionID          string `json:"agent_session_id,omitempty"`
	StrictResume            bool   `json:"strict_resume,omitempty"`
	RequireExisting         bool   `json:"require_existing_native_session,omitempty"`
	ObserveToolObservations bool   `json:"observe_tool_observations,omitempty"`
}

// Lines the agent writes on stdout besides the wire events: the fate of an
// active input after its write.
type inputFate struct {
	InputID string `json:"input_id"`
	Code    string `json:"code,omitempty"`
	Error   string `json:"error,omitempty"`
}

// eventTypes are the wire events an agent may write; each is decoded by
// the wire package's strict decoder, as if it had arrived from a peer.
var eventTypes = map[string]string{
	"delta": "", "thinking": "", "tool_call": "", "usage": "", "error": "", "done": "",
	"permission_request":     "permission_decision",
	"prompt_for_user_choice": "prompt_for_user_choice_decision",
	"function_call":          "function_result",
}

// turnState relays one Turn's lines.
type turnState struct {
	e       *executor
	p       *process
	turn    harness.Turn
	emit    harness.Emit
	content string
	seq     uint64
	n       int // lines read
}

// relay writes the input and forwards events until done (nil failure),
// cancellation (nil failure, partial content) or a failure.
func (t *turnState) relay(ctx context.Context, lines <-chan lineResult) (wire.Done, *failure) {
	partial := func() wire.Done { return wire.Done{Content: t.content} }
	wctx, cancel := context.WithTimeout(ctx, t.e.cfg.IdleTimeout)
	err := t.p.writeLine(wctx, inputLine{Type: "input", RunID: t.turn.RunID, SessionID: t.e.sessionID, Input: t.turn.Input, options: t.e.options})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return partial(), nil
		}
		return partial(), &failure{wire.EngineServerError, "exec: writing the input to the agent failed: " + err.Error()}
	}
	idle := time.NewTimer(t.e.cfg.IdleTimeout)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return partial(), nil
		case <-idle.C:
			if t.p.waiting() {
				// decision: a Turn waiting for Core's answer is not hung; the
				// user may take long to decide (daemon-protocol.txt:138 puts
				// acceptance under the Turn lifetime, not a timer).
				idle.Reset(t.e.cfg.IdleTimeout)
				continue
			}
			return partial(), &failure{wire.EngineRequestTimeout, fmt.Sprintf("exec: the agent wrote nothing for %s", t.e.cfg.IdleTimeout)}
		case lr, ok := <-lines:
			if !ok || lr.err != nil {
				what := "closed its output"
				if lr.err != nil {
					what = lr.err.Error()
				}
				return partial(), &failure{wire.EngineServerError, "exec: the agent ended before done (" + what + ")"}
			}
			t.n++
			idle.Reset(t.e.cfg.IdleTimeout)
			done, final, fail := t.handle(ctx, lr.line)
			if fail != nil {
				return partial(), fail
			}
			if final {
				return done, nil
			}
		}
	}
}

// handle decodes one line and forwards it.
func (t *turnState) handle(ctx context.Context, line []byte) (wire.Done, bool, *failure) {
	line = bytes.TrimRight(line, "\r\n")
	if len(bytes.TrimSpace(line)) == 0 {
		// decision: blank lines carry nothing and are skipped, as a JSON
		// lines reader does; any other non-event is a failure.
		return wire.Done{}, false, nil
	}
	bad := func(err error) *failure {
		return &failure{wire.EngineServerError, fmt.Sprintf("exec: agent output line %d: %s", t.n, err)}
	}
	env, err := wire.DecodeEnvelope(line)
	if err != nil {
		return wire.Done{}, false, bad(err)
	}
	if env.ID != "" {
		return wire.Done{}, false, bad(fmt.Errorf("id is set by the adapter, not the agent"))
	}
	switch env.Type {
	case "input_accepted", "input_rejected":
		var f inputFate
		dec := json.NewDecoder(bytes.NewReader(env.Payload))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil || f.InputID == "" {
			return wire.Done{}, false, bad(fmt.Errorf("%s: payload needs input_id (and only code, error)", env.Type))
		}
		n := harness.InputNotice{InputID: f.InputID, Accepted: env.Type == "input_accepted", Code: f.Code, Error: boundText(f.Error)}
		if !n.Accepted && n.Code == "" {
			n.Code = "rejected"
		}
		if t.turn.Notify != nil {
			t.turn.Notify(n)
		}
		return wire.Done{}, false, nil
	}
	answer, ok := eventTypes[env.Type]
	if !ok {
		return wire.Done{}, false, bad(fmt.Errorf("type %q is not an agent event", env.Type))
	}
	frame, err := json.Marshal(wire.Envelope{Type: env.Type, ID: t.turn.RunID, Payload: env.Payload})
	if err != nil {
		return wire.Done{}, false, bad(err)
	}
	msg, err := wire.Decode(frame, wire.RuntimeToCore)
	if err != nil {
		return wire.Done{}, false, bad(err)
	}
	p := msg.Payload
	switch v := p.(type) {
	case wire.Done:
		if v.Content == "" {
			v.Content = t.content
		}
		return v, true, nil
	case wire.Delta:
		// decision: the adapter numbers deltas when the agent leaves
		// sequence out; an agent that numbers them must count up.
		if v.Sequence == 0 {
			v.Sequence = t.seq + 1
		} else if v.Sequence <= t.seq {
			return wire.Done{}, false, bad(fmt.Errorf("delta sequence %d does not follow %d", v.Sequence, t.seq))
		}
		t.seq = v.Sequence
		t.content += v.Delta
		p = v
	case wire.PermissionRequest:
		t.p.opened(v.RequestID, answer)
	case wire.PromptForUserChoice:
		t.p.opened(v.AskID, answer)
	case wire.FunctionCall:
		t.p.opened(v.CallID, answer)
	}
	if err := t.emit(ctx, p); err != nil {
		// The connection is gone or the Turn is cancelled: stop the agent.
		return wire.Done{Content: t.content}, true, nil
	}
	return wire.Done{}, false, nil
}
