// Package script is the controlled Harness adapter the contract scenarios
// run: each Turn plays a fixed list of steps (deltas, thinking, usage, tool
// calls, errors, permission requests, user-choice questions, function
// calls, active input, delays, failures, hangs, held preparations and
// cancellations), so a scenario can say exactly what the native side does
// without a model.
package script

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
	"github.com/agentwire/agentwire/wire/wiretest"
)

// Kind is the agent kind the adapter declares unless Script.Kind says otherwise.
const Kind = "script"

// Step is one thing a Turn does. Exactly one member is set.
type Step struct {
	Delta    string         `json:"delta,omitempty"`
	Thinking string         `json:"thinking,omitempty"`
	Usage    *wire.Usage    `json:"usage,omitempty"`
	ToolCall *wire.ToolCall `json:"tool_call,omitempty"`
	// Error emits an error frame (the Run then ends with done).
	Error string `json:"error,omitempty"`
	// Delay waits (cancellation ends it early).
	Delay time.Duration `json:"delay,omitempty"`
	// Hang waits until the Turn is cancelled; the cancellation settles
	// with the content produced so far.
	Hang bool `json:"hang,omitempty"`
	// HoldCancel waits like Hang, but the cancellation settles only once
	// the file it names exists: a slow native cancellation whose end a
	// crash test decides, so the window between prompt_cancel and its
	// receipt is as long as the test needs (the Runtime keeps the Run and
	// its cleanup ownership meanwhile).
	HoldCancel string `json:"hold_cancel,omitempty"`
	// Fail ends the Turn with this error and no final snapshot.
	Fail string `json:"fail,omitempty"`
	// Permission, Choice and Function emit the question and wait for
	// Core's answer (or the Turn's cancellation); the answer is recorded in
	// the content as "[id:answer]". Their IDs are sent as written, in every
	// Turn: a permission request_id or a choice ask_id is the interaction
	// ID that Core's answer names alone, so a later Turn on the same
	// connection that asks it again while a peer still holds the earlier
	// question fails with an error (execution.refusalText).
	Permission *wire.PermissionRequest   `json:"permission,omitempty"`
	Choice     *wire.PromptForUserChoice `json:"choice,omitempty"`
	Function   *wire.FunctionCall        `json:"function,omitempty"`
	// AwaitInput waits until an active input was written into the Turn (or
	// the Turn is cancelled); its text is appended to the content.
	AwaitInput bool `json:"await_input,omitempty"`
}

// Input modes: how the adapter's native write of active input behaves.
const (
	// InputAccept (the default) completes the write and reports the input
	// accepted (consumed) at once.
	InputAccept = "accept"
	// InputWritten completes the write; acceptance never comes.
	InputWritten = "written"
	// InputHang never completes the write (until its bound ends it).
	InputHang = "hang"
	// InputFail fails the write part-way.
	InputFail = "fail"
)

// Script is what every Turn of the adapter plays.
type Script struct {
	Kind string `json:"kind,omitempty"`
	// Capabilities overrides the fixture's fully capable declaration.
	Capabilities *wire.AgentKindCapabilities `json:"capabilities,omitempty"`
	Steps        []Step                      `json:"steps"`
	// PrepareFails makes native preparation fail.
	PrepareFails bool `json:"prepare_fails,omitempty"`
	// HoldPrepare makes native preparation wait until the file it names
	// exists (or the preparation is abandoned): a slow preparation whose
	// end a crash test decides.
	HoldPrepare string `json:"hold_prepare,omitempty"`
	// CloseFails makes every Executor close fail (cleanup unconfirmed).
	CloseFails bool `json:"close_fails,omitempty"`
	// CloseFailures makes the first N closes of each Executor fail; the
	// next one succeeds (a cleanup that a retry settles).
	CloseFailures int `json:"close_failures,omitempty"`
	// SessionID is the native Session identity done reports.
	SessionID string `json:"session_id,omitempty"`
	// Input is the active input mode (InputAccept when empty).
	Input string `json:"input,omitempty"`
}

// Adapter plays Script.
type Adapter struct {
	mu     sync.Mutex
	script Script
}

// New returns an adapter that plays s.
func New(s Script) *Adapter { return &Adapter{script: s} }

// Set replaces the script for later Turns.
func (a *Adapter) Set(s Script) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.script = s
}

func (a *Adapter) get() Script {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.script
}

// Declaration declares every capability supported unless the script says otherwise.
func (a *Adapter) Declaration() harness.Declaration {
	s := a.get()
	kind := s.Kind
	if kind == "" {
		kind = Kind
	}
	caps := wiretest.Capabilities()
	if s.Capabilities != nil {
		caps = *s.Capabilities
	}
	return harness.Declaration{Kind: kind, Available: true, Version: "script", Capabilities: caps}
}

// ErrPrepare is the native preparation failure of PrepareFails.
var ErrPrepare = errors.New("script: native preparation failed")

// NewExecutor prepares an Executor (or fails as scripted).
func (a *Adapter) NewExecutor(ctx context.Context, cfg harness.ExecutorConfig) (harness.Executor, error) {
	s := a.get()
	if s.PrepareFails {
		return nil, ErrPrepare
	}
	if s.HoldPrepare != "" {
		if err := waitFile(ctx, s.HoldPrepare); err != nil {
			return nil, err
		}
	}
	return &executor{script: s, adapter: a}, nil
}

type executor struct {
	// script is the one the Executor was prepared with (its close
	// failures); each Turn plays the adapter's script as it is when the
	// Turn starts, so Set reaches a reused idle Executor too.
	script  Script
	adapter *Adapter

	mu     sync.Mutex
	turn   *turnState // the running Turn, nil between Turns
	closes int        // close attempts so far
}

// turnState is what Steer and Decide reach of the running Turn.
type turnState struct {
	script  Script
	runID   string
	notify  harness.Notify
	inputs  chan string                    // texts of written inputs
	waiting map[string]chan harness.Answer // open questions, by interaction ID
}

func (e *executor) running(runID string) *turnState {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.turn == nil || e.turn.runID != runID {
		return nil
	}
	return e.turn
}

// ErrWrite is the part-way write failure of InputFail.
var ErrWrite = errors.New("script: native write of the input failed")

// Steer writes active input into the running Turn as the script's Input
// mode says. An accepted input is reported before the Turn sees it, so the
// receipt never races the Turn's next frame.
func (e *executor) Steer(ctx context.Context, runID, inputID string, in wire.MessageInput) error {
	t := e.running(runID)
	if t == nil {
		return harness.ErrRunInactive
	}
	switch t.script.Input {
	case InputHang:
		<-ctx.Done()
		return ctx.Err()
	case InputFail:
		return ErrWrite
	case "", InputAccept:
		if t.notify != nil {
			t.notify(harness.InputNotice{InputID: inputID, Accepted: true})
		}
	}
	select {
	case t.inputs <- text(in):
	default: // the Turn takes at most a few; a full buffer drops the text only
	}
	return nil
}

// Decide answers an open question of the running Turn; a question the Turn
// does not (or no longer) wait for is not pending.
func (e *executor) Decide(ctx context.Context, runID string, a harness.Answer) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.turn == nil || e.turn.runID != runID {
		return harness.ErrRunInactive
	}
	ch, ok := e.turn.waiting[a.InteractionID]
	if !ok {
		return harness.ErrRunInactive
	}
	delete(e.turn.waiting, a.InteractionID)
	ch <- a
	return nil
}

func text(in wire.MessageInput) string {
	var out string
	for _, m := range in {
		for _, c := range m.Content {
			out += c.Text
		}
	}
	return out
}

func answerText(a harness.Answer) string {
	switch {
	case a.Permission != nil:
		if a.Permission.Approved != nil && *a.Permission.Approved {
			return "allowed"
		}
		return "denied"
	case a.Choice != nil:
		if a.Choice.Cancelled {
			return "cancelled"
		}
		var out string
		for _, q := range a.Choice.QuestionAnswers {
			for _, ans := range q.Answers {
				out += ans
			}
		}
		return out
	case a.Result != nil:
		var out string
		for _, c := range a.Result.Content {
			out += c.Text
		}
		return out
	}
	return ""
}

// answered is what an answered question adds to the content.
func answered(err error, id string, a harness.Answer) string {
	if err != nil {
		return ""
	}
	return "[" + id + ":" + answerText(a) + "]"
}

// ask registers id as an open question, emits q and waits for the answer.
func (e *executor) ask(ctx context.Context, t *turnState, id string, q wire.Payload, emit harness.Emit) (harness.Answer, error) {
	ch := make(chan harness.Answer, 1)
	e.mu.Lock()
	t.waiting[id] = ch
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		delete(t.waiting, id)
		e.mu.Unlock()
	}()
	if err := emit(ctx, q); err != nil {
		// A cancellation can end the wait for the question's write after
		// the question went out and was answered: keep that answer.
		select {
		case a := <-ch:
			return a, nil
		default:
		}
		return harness.Answer{}, err
	}
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		// An answer Decide handed over before the cancellation was applied:
		// its receipt already said so (applied=true settles the operation,
		// daemon-protocol.txt:144), so it must not be lost when both are
		// ready and select picks the cancellation.
		select {
		case a := <-ch:
			return a, nil
		default:
		}
		return harness.Answer{}, ctx.Err()
	}
}

// Run plays the steps.
func (e *executor) Run(ctx context.Context, turn harness.Turn, emit harness.Emit) (wire.Done, error) {
	// A Builder, not +=: a long stream of deltas would copy the whole
	// content once per delta.
	var content strings.Builder
	var seq uint64
	sc := e.adapter.get()
	done := func() wire.Done {
		d := wire.Done{Content: content.String()}
		if sc.SessionID != "" {
			d.Metadata = &wire.DoneMetadata{AgentSessionID: sc.SessionID}
		}
		return d
	}
	t := &turnState{script: sc, runID: turn.RunID, notify: turn.Notify, inputs: make(chan string, 8), waiting: map[string]chan harness.Answer{}}
	e.mu.Lock()
	e.turn = t
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.turn = nil
		e.mu.Unlock()
	}()
	for _, st := range sc.Steps {
		var err error
		var a harness.Answer
		switch {
		case st.Permission != nil:
			a, err = e.ask(ctx, t, st.Permission.RequestID, *st.Permission, emit)
			content.WriteString(answered(err, st.Permission.RequestID, a))
		case st.Choice != nil:
			a, err = e.ask(ctx, t, st.Choice.AskID, *st.Choice, emit)
			content.WriteString(answered(err, st.Choice.AskID, a))
		case st.Function != nil:
			a, err = e.ask(ctx, t, st.Function.CallID, *st.Function, emit)
			content.WriteString(answered(err, st.Function.CallID, a))
		case st.AwaitInput:
			select {
			case in := <-t.inputs:
				content.WriteString(in)
			case <-ctx.Done():
				// An input written (and reported accepted) before the
				// cancellation was consumed: keep it, as ask keeps an answer.
				select {
				case in := <-t.inputs:
					content.WriteString(in)
				default:
				}
				return done(), nil
			}
		case st.Delta != "":
			seq++
			content.WriteString(st.Delta)
			err = emit(ctx, wire.Delta{Delta: st.Delta, Sequence: seq})
		case st.Thinking != "":
			err = emit(ctx, wire.Thinking{Text: st.Thinking})
		case st.Usage != nil:
			err = emit(ctx, *st.Usage)
		case st.ToolCall != nil:
			err = emit(ctx, *st.ToolCall)
		case st.Error != "":
			err = emit(ctx, wire.ErrorFrame{Error: st.Error})
		case st.Fail != "":
			return wire.Done{}, errors.New(st.Fail)
		case st.Hang:
			<-ctx.Done()
			return done(), nil
		case st.HoldCancel != "":
			<-ctx.Done()
			_ = waitFile(context.Background(), st.HoldCancel)
			return done(), nil
		case st.Delay > 0:
			t := time.NewTimer(st.Delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return done(), nil
			case <-t.C:
			}
		}
		if err != nil {
			// The connection is gone or the Turn was cancelled: settle with
			// what was produced.
			return done(), nil
		}
	}
	return done(), nil
}

// waitFile returns once path exists, or with ctx's error when ctx ends
// first. It polls: the holds it serves are test controls, not hot paths.
func waitFile(ctx context.Context, path string) error {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// ErrClose is the cleanup failure of CloseFails.
var ErrClose = errors.New("script: native close failed")

func (e *executor) Close(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closes++
	if e.script.CloseFails || e.closes <= e.script.CloseFailures {
		return ErrClose
	}
	return nil
}
