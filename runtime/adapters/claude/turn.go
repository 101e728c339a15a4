package claude

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// errCancelUnconfirmed: the CLI never reported the interrupted result.
var errCancelUnconfirmed = fmt.Errorf("claude adapter: Claude Code did not confirm the interruption (no aborted result); the CLI was killed: %w", harness.ErrCancelUnsettled)

// The events of a Turn, as the CLI writes them (only what the adapter reads).
type (
	streamEvent struct {
		Event struct {
			Type         string `json:"type"`
			Index        int    `json:"index"`
			ContentBlock struct {
				Type string `json:"type"`
			} `json:"content_block"`
			Delta struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				Thinking string `json:"thinking"`
			} `json:"delta"`
			Message struct {
				ID string `json:"id"`
			} `json:"message"`
			Usage *resultUsage `json:"usage"`
		} `json:"event"`
		APIMessageID string `json:"api_message_id"`
	}
	resultEvent struct {
		Subtype        string      `json:"subtype"`
		IsError        bool        `json:"is_error"`
		Result         string      `json:"result"`
		SessionID      string      `json:"session_id"`
		TerminalReason string      `json:"terminal_reason"`
		APIErrorStatus *int        `json:"api_error_status"`
		Usage          resultUsage `json:"usage"`
		Errors         []string    `json:"errors"`
		// TotalCostUSD is the process's running total (every result of
		// the CLI so far), not this result's cost.
		TotalCostUSD *float64 `json:"total_cost_usd"`
		// StructuredOutput is the document of a --json-schema Run.
		StructuredOutput json.RawMessage `json:"structured_output"`
	}
	resultUsage struct {
		InputTokens              int64 `json:"input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		OutputTokensDetails      struct {
			ThinkingTokens int64 `json:"thinking_tokens"`
		} `json:"output_tokens_details"`
	}
	assistantEvent struct {
		Message struct {
			Model string `json:"model"`
		} `json:"message"`
		Error        string `json:"error"`
		APIErrorType string `json:"api_error_type"`
		APIError     string `json:"api_error"`
	}
)

// turnLoop is one Run's reading of the CLI's events.
type turnLoop struct {
	e    *executor
	turn harness.Turn
	t    *turnState
	emit harness.Emit
	bg   context.Context // never cancelled: a Run's last frames go out after a cancellation

	observeMessages bool
	observeTools    bool
	tools           map[string]toolUse // tools called and not returned, by tool_use ID
	seq             uint64
	thinkingSeq     uint64
	content         strings.Builder
	open            map[int]*openMessage // text blocks of the current model call, by index
	callID          string               // the model call the blocks belong to
	apiError        *assistantEvent      // the synthetic error message, if any
	usage           resultUsage          // summed over the Turn's results
	cost            float64              // the Turn's share of the process's cost
	costed          bool                 // a result reported a cost
	calls           resultUsage          // summed over the Turn's model calls, as streamed
}

type openMessage struct {
	id   string
	text strings.Builder
}

// Run executes one Turn: the input as one user message (its uuid the Run
// ID), then the CLI's events until its result.
func (e *executor) Run(ctx context.Context, turn harness.Turn, emit harness.Emit) (wire.Done, error) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	bg := context.WithoutCancel(ctx)
	if !e.proc.Alive() || e.ch.Err() != nil {
		return wire.Done{}, fmt.Errorf("claude adapter: the CLI is gone (%s)", e.proc.ExitText())
	}
	if err := harness.CheckInput(turn.Declaration.Capabilities, turn.Input); err != nil || turn.Input.HasImage() {
		// A text-only transport rejects image content, never drops it
		// (daemon-protocol.txt:98); nothing reaches the CLI.
		if err == nil {
			err = &harness.UnsupportedError{Capability: "message_images", What: "input"}
		}
		_ = emit(bg, wire.ErrorFrame{Error: "claude adapter: " + err.Error()})
		return e.done(""), nil
	}
	t := &turnState{runID: turn.RunID, caps: turn.Declaration.Capabilities, notify: turn.Notify, steers: map[string]*steerState{},
		questions: map[string]*question{}, byRequest: map[string]*question{}}
	e.mu.Lock()
	e.cur = t
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.cur = nil
		e.mu.Unlock()
		t.end("the Turn ended before Claude Code took the input")
	}()
	l := &turnLoop{e: e, turn: turn, t: t, emit: emit, bg: bg, open: map[int]*openMessage{}, tools: map[string]toolUse{},
		observeMessages: e.observeMessages, observeTools: e.observeTools}
	wctx, cancel := context.WithTimeout(ctx, e.cfg.StartTimeout)
	err := e.ch.SendUser(wctx, turn.RunID, textContent(turn.Input))
	cancel()
	if err != nil {
		if ctx.Err() != nil && !e.ch.broken() {
			return e.done(""), nil // nothing was written: nothing ran
		}
		return wire.Done{}, fmt.Errorf("claude adapter: writing the input: %w", err)
	}
	return l.run(ctx)
}

// run reads events until the Turn's result. A cancellation asks the CLI
// to interrupt and waits, bounded, for the aborted result.
func (l *turnLoop) run(ctx context.Context) (wire.Done, error) {
	e := l.e
	var deadline <-chan time.Time
	cancelled := ctx.Done()
	for {
		ev, ok := e.ch.Pop()
		if !ok {
			if e.ch.Err() != nil {
				// Every event was read and the CLI is gone: no result will come.
				return wire.Done{}, fmt.Errorf("claude adapter: the CLI ended during the Turn (%v; %s)", e.ch.Err(), e.proc.ExitText())
			}
			select {
			case <-e.ch.Ready():
				continue
			case <-cancelled:
				cancelled = nil
				// The interrupt is acknowledged at once; the aborted result
				// that follows is the settlement (issue 20).
				ictx, cancel := context.WithTimeout(l.bg, e.cfg.InterruptWait)
				_, err := e.ch.Request(ictx, "interrupt", nil)
				cancel()
				if err != nil {
					e.log.Warn("claude: interrupt not acknowledged", "err", err)
				}
				deadline = time.After(e.cfg.InterruptWait)
				continue
			case <-deadline:
				e.proc.Terminate(peer.SystemClock(), e.cfg.CloseGrace, e.log.With("run_id", l.turn.RunID))
				return wire.Done{}, errCancelUnconfirmed
			}
		}
		if done, finished, err := l.handle(ev); finished || err != nil {
			return done, err
		}
	}
}

// handle maps one event; finished once the Turn's result was read.
func (l *turnLoop) handle(ev event) (wire.Done, bool, error) {
	switch ev.Type {
	case "system":
		if ev.Subtype == "init" {
			l.e.logMCPInit(ev.Raw)
		}
	case "stream_event":
		var se streamEvent
		if err := json.Unmarshal(ev.Raw, &se); err != nil {
			return wire.Done{}, false, nil
		}
		return wire.Done{}, false, l.stream(se)
	case "assistant":
		var a assistantEvent
		if json.Unmarshal(ev.Raw, &a) == nil && a.Error != "" {
			l.apiError = &a
		}
		return wire.Done{}, false, l.toolsCalled(ev.Raw)
	case "control_request":
		var sub struct {
			Subtype string `json:"subtype"`
		}
		_ = json.Unmarshal(ev.Request, &sub)
		if sub.Subtype == "can_use_tool" {
			return wire.Done{}, false, l.canUseTool(ev)
		}
		if r, ok := mcpMessage(ev); ok && r.Message.Method == "tools/call" {
			return wire.Done{}, false, l.functionCall(ev, r)
		}
		// decision: a control request the adapter does not serve is
		// refused, so the CLI never waits for an answer that will not come.
		return wire.Done{}, false, l.e.ch.Refuse(l.bg, ev.RequestID, "not supported by this Runtime: "+sub.Subtype)
	case "control_cancel_request":
		return wire.Done{}, false, l.withdrawn(ev.RequestID)
	case "command_lifecycle":
		var c struct {
			CommandUUID string `json:"command_uuid"`
			State       string `json:"state"`
		}
		if json.Unmarshal(ev.Raw, &c) == nil && c.State == "started" {
			l.t.started(c.CommandUUID)
		}
	case "user":
		// The replay of a steered message: it was consumed.
		var u struct {
			UUID     string `json:"uuid"`
			IsReplay bool   `json:"isReplay"`
		}
		if json.Unmarshal(ev.Raw, &u) == nil && u.IsReplay && u.UUID != l.turn.RunID {
			l.t.started(u.UUID)
		}
		if !u.IsReplay {
			return wire.Done{}, false, l.toolsReturned(ev.Raw)
		}
	case "result":
		var r resultEvent
		if err := json.Unmarshal(ev.Raw, &r); err != nil {
			return wire.Done{}, true, fmt.Errorf("claude adapter: the result does not decode: %w", err)
		}
		l.addUsage(r.Usage)
		l.addCost(r.TotalCostUSD)
		if !r.IsError && l.t.queued() {
			// Input written during plain text runs as a follow-up with its
			// own result, which the Turn waits for (issue 20).
			return wire.Done{}, false, nil
		}
		return l.result(r), true, nil
	}
	return wire.Done{}, false, nil
}

func (l *turnLoop) addUsage(u resultUsage) { l.usage.add(u) }

// addCost takes a result's process total: the Turn's cost is what the
// total grew by since the Executor's previous result.
//
// decision: Claude Code reports only the process's running total
// (total_cost_usd), so a Run's cost_usd is the difference of the totals
// around its results; a total that went down (it never should) counts as
// nothing rather than a negative cost.
func (l *turnLoop) addCost(total *float64) {
	if total == nil {
		return
	}
	l.e.mu.Lock()
	grown := *total - l.e.costTotal
	l.e.costTotal = *total
	l.e.mu.Unlock()
	l.costed = true
	if grown > 0 {
		l.cost += grown
	}
}

func (u *resultUsage) add(v resultUsage) {
	u.InputTokens += v.InputTokens
	u.CacheCreationInputTokens += v.CacheCreationInputTokens
	u.CacheReadInputTokens += v.CacheReadInputTokens
	u.OutputTokens += v.OutputTokens
	u.OutputTokensDetails.ThinkingTokens += v.OutputTokensDetails.ThinkingTokens
}

// stream maps the model call's stream: text deltas (with their message's
// item ID when Core observes messages), thinking, and the messages' ends.
func (l *turnLoop) stream(se streamEvent) error {
	ev := se.Event
	switch ev.Type {
	case "message_start":
		l.callID = ev.Message.ID
	case "message_delta":
		// A model call's final usage: the Run's cumulative snapshot grows
		// by it (daemon-protocol.txt:100).
		if ev.Usage != nil && l.turn.Declaration.Capabilities.Usage.Supports() {
			l.calls.add(*ev.Usage)
			return l.send(usageOf(l.calls, l.e.cfg.Model))
		}
	case "content_block_start":
		if ev.ContentBlock.Type == "text" {
			m := &openMessage{id: l.itemID(se, ev.Index)}
			l.open[ev.Index] = m
			if l.observeMessages {
				return l.send(wire.OutputMessage{ID: m.id, Status: wire.OutputInProgress})
			}
		}
	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			if ev.Delta.Text == "" {
				return nil
			}
			l.seq++
			l.content.WriteString(ev.Delta.Text)
			d := wire.Delta{Delta: ev.Delta.Text, Sequence: l.seq}
			if m := l.open[ev.Index]; m != nil {
				m.text.WriteString(ev.Delta.Text)
				if l.observeMessages {
					d.ItemID = m.id
				}
			}
			return l.send(d)
		case "thinking_delta":
			if ev.Delta.Thinking == "" {
				return nil
			}
			l.thinkingSeq++
			return l.send(wire.Thinking{Text: ev.Delta.Thinking, Sequence: l.thinkingSeq})
		}
	case "content_block_stop":
		m := l.open[ev.Index]
		if m == nil {
			return nil
		}
		delete(l.open, ev.Index)
		if l.observeMessages {
			text := m.text.String()
			return l.send(wire.OutputMessage{ID: m.id, Status: wire.OutputCompleted, Text: &text})
		}
	}
	return nil
}

// itemID names a text block: the model call's message ID and the block's
// index, unique within the Run.
func (l *turnLoop) itemID(se streamEvent, index int) string {
	id := l.callID
	if id == "" {
		id = se.APIMessageID
	}
	return id + ":" + strconv.Itoa(index)
}

// result ends the Turn: messages still open are incomplete, an error is
// reported with its classification, and done carries the content, the
// usage and the native Session.
func (l *turnLoop) result(r resultEvent) wire.Done {
	for idx, m := range l.open {
		delete(l.open, idx)
		if l.observeMessages {
			text := m.text.String()
			_ = l.send(wire.OutputMessage{ID: m.id, Status: wire.OutputIncomplete, Text: &text})
		}
	}
	done := l.e.done(l.content.String())
	if doc := bytes.TrimSpace(r.StructuredOutput); len(doc) > 0 && !bytes.Equal(doc, []byte("null")) && json.Valid(doc) {
		// decision: a structured Run's content is the document the model
		// gave the CLI's StructuredOutput tool (daemon-protocol.txt:54
		// asks for the answer in the schema), compacted; the text the
		// model said around it streamed as deltas and stays there.
		var b bytes.Buffer
		if json.Compact(&b, doc) == nil {
			done.Content = b.String()
		}
	}
	if l.turn.Declaration.Capabilities.Usage.Supports() {
		// The results' sums; never behind the streamed snapshots.
		u := l.usage
		if u.InputTokens+u.OutputTokens < l.calls.InputTokens+l.calls.OutputTokens {
			u = l.calls
		}
		done.Usage = usageOf(u, l.e.cfg.Model)
		if l.costed {
			cost := l.cost
			done.Usage.CostUSD = &cost
		}
	}
	if r.IsError && !strings.HasPrefix(r.TerminalReason, "aborted") {
		_ = l.send(classify(r, l.apiError))
	}
	return done
}

func (l *turnLoop) send(p wire.Payload) error { return l.emit(l.bg, p) }

// done is the Turn's done with the native Session the Executor holds.
func (e *executor) done(content string) wire.Done {
	return wire.Done{Content: content, Metadata: &wire.DoneMetadata{AgentSessionID: e.sessionID}}
}

// usageOf is the Run's usage: the result sums the Turn's model calls.
func usageOf(u resultUsage, model string) wire.Usage {
	cached := u.CacheReadInputTokens
	input := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	total := input + u.OutputTokens
	return wire.Usage{Tokens: wire.NewTokenUsage(input, cached, u.OutputTokens, u.OutputTokensDetails.ThinkingTokens, total),
		Provider: "anthropic", Model: model}
}

// textContent is the ordered input as the user message's content blocks.
func textContent(in wire.MessageInput) []any {
	var out []any
	for _, m := range in {
		for _, c := range m.Content {
			if c.Type == wire.ContentText {
				out = append(out, map[string]any{"type": "text", "text": c.Text})
			}
		}
	}
	return out
}
