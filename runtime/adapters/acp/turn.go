package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// errCancelUnsettled: the prompt never ended with stopReason cancelled.
var errCancelUnsettled = fmt.Errorf("acp adapter: the agent did not end the cancelled prompt (no stopReason cancelled); it was killed: %w", harness.ErrCancelUnsettled)

// turn is one Run's mapping of the agent's updates and requests.
type turn struct {
	e      *executor
	runID  string
	caps   wire.AgentKindCapabilities
	emit   harness.Emit
	bg     context.Context // never cancelled: a Run's last frames go out after a cancellation
	ended  chan struct{}   // closed when the Run ends: open questions are answered cancelled
	endOne sync.Once
	// lost stops the Run natively once an emit failed: the connection is
	// gone, and a Run must still settle (harness.Emit, durable_turns).
	lost     context.CancelFunc
	emitGone bool // guarded by mu

	mu          sync.Mutex
	seq         uint64
	thinkingSeq uint64
	content     strings.Builder
	tools       map[string]*toolState // by toolCallId
	questions   map[string]*question  // open permission requests, by interaction ID
	asked       int
	calls       map[string]*pendingCall // function calls waiting for Core's result, by call ID
	called      int
}

type toolState struct {
	name, kind, title string
	input             wire.NativeJSON
	before, after     bool
}

// Run executes one Turn: the input as a session/prompt, then, while
// steered input waits in the Inbox when a prompt ends, that input as the
// next session/prompt of the same Run. Done follows the last prompt.
func (e *executor) Run(ctx context.Context, ht harness.Turn, emit harness.Emit) (wire.Done, error) {
	e.runMu.Lock()
	defer e.runMu.Unlock()
	bg := context.WithoutCancel(ctx)
	select {
	case <-e.conn.Done():
		return wire.Done{}, fmt.Errorf("acp adapter: the agent is gone (%s)", e.proc.ExitText())
	default:
	}
	if err := harness.CheckInput(ht.Declaration.Capabilities, ht.Input); err != nil || ht.Input.HasImage() {
		// A text-only transport rejects image content, never drops it
		// (daemon-protocol.txt:98); nothing reaches the agent.
		if err == nil {
			err = &harness.UnsupportedError{Capability: "message_images", What: "input"}
		}
		_ = emit(bg, wire.ErrorFrame{Error: "acp adapter: " + err.Error()})
		return e.done(""), nil
	}
	// A failed emit cancels runCtx, which settles the prompt the way a
	// cancellation does (session/cancel, then stopReason cancelled).
	ctx, lost := context.WithCancel(ctx)
	defer lost()
	t := &turn{e: e, runID: ht.RunID, caps: ht.Declaration.Capabilities, emit: emit, bg: bg, ended: make(chan struct{}),
		lost: lost, tools: map[string]*toolState{}, questions: map[string]*question{}, calls: map[string]*pendingCall{}}
	e.mu.Lock()
	e.cur = t
	e.mu.Unlock()
	e.Begin(ht)
	defer func() {
		e.mu.Lock()
		e.cur = nil
		e.mu.Unlock()
		e.End() // input never submitted is refused as run_inactive
		t.end()
	}()
	input := ht.Input
	for {
		if ctx.Err() != nil {
			// Cancelled between prompts: nothing runs natively.
			return e.done(t.text()), nil
		}
		res, err := t.prompt(ctx, input)
		t.settleTools(res.stop)
		if err != nil {
			return e.done(t.text()), err
		}
		if res.failed != "" {
			_ = emit(bg, wire.ErrorFrame{Error: res.failed})
			return e.done(t.text()), nil
		}
		if res.stop == sdk.StopReasonCancelled || ctx.Err() != nil {
			return e.done(t.text()), nil
		}
		// decision: steered input is submitted only after a prompt that
		// ended normally; Finish closes the Inbox under the lock Steer
		// writes under, so an input is either taken here or refused by End.
		if e.Finish() {
			return e.done(t.text()), nil
		}
		input = e.Take()
	}
}

// promptResult is how one session/prompt ended.
type promptResult struct {
	stop   sdk.StopReason
	failed string // the prompt's JSON-RPC error, as the error frame's text
}

// prompt submits input and waits for its end. A cancellation sends
// session/cancel, answers the open permission requests cancelled (as ACP
// asks of a client) and waits, bounded, for stopReason cancelled.
func (t *turn) prompt(ctx context.Context, input wire.MessageInput) (promptResult, error) {
	e := t.e
	type answer struct {
		resp sdk.PromptResponse
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := e.conn.Prompt(t.bg, sdk.PromptRequest{SessionId: sdk.SessionId(e.sessionID), Prompt: blocks(input)})
		done <- answer{resp, err}
	}()
	var a answer
	select {
	case a = <-done:
	case <-ctx.Done():
		if err := e.conn.Cancel(t.bg, sdk.CancelNotification{SessionId: sdk.SessionId(e.sessionID)}); err != nil {
			e.log.Warn("acp: session/cancel not sent", "run_id", t.runID, "err", err)
		}
		t.end()
		timer := time.NewTimer(e.cfg.CancelWait)
		defer timer.Stop()
		select {
		case a = <-done:
		case <-timer.C:
			e.proc.Terminate(peer.SystemClock(), e.cfg.CloseGrace, e.log.With("run_id", t.runID))
			<-done // the connection ended with the process
			return promptResult{}, errCancelUnsettled
		}
		if a.err != nil || a.resp.StopReason != sdk.StopReasonCancelled {
			// decision: only stopReason cancelled proves the agent stopped
			// because it was asked to; a prompt that ended otherwise after
			// session/cancel finished on its own, which the done reports,
			// and the cancellation is not claimed settled.
			if a.err != nil {
				return promptResult{}, fmt.Errorf("acp adapter: the cancelled prompt failed: %w: %w", a.err, harness.ErrCancelUnsettled)
			}
			return promptResult{stop: a.resp.StopReason}, nil
		}
		return promptResult{stop: a.resp.StopReason}, nil
	}
	if a.err != nil {
		var re *sdk.RequestError
		if errors.As(a.err, &re) {
			// decision: the agent answered the prompt with an error (a
			// failed model call, say): an execution error, then done.
			// Its code is JSON-RPC's, not an engine failure code, and the
			// message is prose: unclassified (daemon-protocol.txt:173).
			return promptResult{failed: fmt.Sprintf("%s: %s", t.e.cfg.Agent.Kind, requestErrorText(re))}, nil
		}
		select {
		case <-e.conn.Done():
			return promptResult{}, fmt.Errorf("acp adapter: the agent ended during the Turn (%s): %w", e.proc.ExitText(), a.err)
		default:
		}
		return promptResult{}, fmt.Errorf("acp adapter: session/prompt: %w", a.err)
	}
	return promptResult{stop: a.resp.StopReason}, nil
}

// requestErrorText is a JSON-RPC error's message and, when present, its
// data.
func requestErrorText(re *sdk.RequestError) string {
	if re.Data == nil {
		return re.Message
	}
	b, err := json.Marshal(re.Data)
	if err != nil {
		return re.Message
	}
	return re.Message + " " + string(b)
}

// end marks the Run over: open permission requests are answered cancelled.
func (t *turn) end() { t.endOne.Do(func() { close(t.ended) }) }

func (t *turn) text() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.content.String()
}

// send emits one frame while the connection lasts; the first failed emit
// stops the Run natively (lost), after which nothing more is emitted.
func (t *turn) send(p wire.Payload) {
	t.mu.Lock()
	gone := t.emitGone
	t.mu.Unlock()
	if gone {
		return
	}
	if err := t.emit(t.bg, p); err != nil {
		t.e.log.Debug("acp: emit failed; stopping the prompt", "run_id", t.runID, "err", err)
		t.mu.Lock()
		t.emitGone = true
		t.mu.Unlock()
		t.lost()
	}
}

// done is a Turn's done with the native session the Executor holds.
func (e *executor) done(content string) wire.Done {
	return wire.Done{Content: content, Metadata: &wire.DoneMetadata{AgentSessionID: e.sessionID}}
}

// blocks is the ordered input as ACP text content blocks.
func blocks(in wire.MessageInput) []sdk.ContentBlock {
	var out []sdk.ContentBlock
	for _, m := range in {
		for _, c := range m.Content {
			if c.Type == wire.ContentText {
				out = append(out, sdk.TextBlock(c.Text))
			}
		}
	}
	return out
}
