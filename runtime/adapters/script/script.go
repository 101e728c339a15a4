// Package script is the controlled Harness adapter the contract scenarios
// run: each Turn plays a fixed list of steps (deltas, thinking, usage, tool
// calls, errors, delays, failures, hangs), so a scenario can say exactly
// what the native side does without a model.
package script

import (
	"context"
	"errors"
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
	// Fail ends the Turn with this error and no final snapshot.
	Fail string `json:"fail,omitempty"`
}

// Script is what every Turn of the adapter plays.
type Script struct {
	Kind string `json:"kind,omitempty"`
	// Capabilities overrides the fixture's fully capable declaration.
	Capabilities *wire.AgentKindCapabilities `json:"capabilities,omitempty"`
	Steps        []Step                      `json:"steps"`
	// PrepareFails makes native preparation fail.
	PrepareFails bool `json:"prepare_fails,omitempty"`
	// CloseFails makes every Executor close fail (cleanup unconfirmed).
	CloseFails bool `json:"close_fails,omitempty"`
	// SessionID is the native Session identity done reports.
	SessionID string `json:"session_id,omitempty"`
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
	return &executor{script: s}, nil
}

type executor struct{ script Script }

// Run plays the steps.
func (e *executor) Run(ctx context.Context, turn harness.Turn, emit harness.Emit) (wire.Done, error) {
	var content string
	var seq uint64
	done := func() wire.Done {
		d := wire.Done{Content: content}
		if e.script.SessionID != "" {
			d.Metadata = &wire.DoneMetadata{AgentSessionID: e.script.SessionID}
		}
		return d
	}
	for _, st := range e.script.Steps {
		var err error
		switch {
		case st.Delta != "":
			seq++
			content += st.Delta
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

// ErrClose is the cleanup failure of CloseFails.
var ErrClose = errors.New("script: native close failed")

func (e *executor) Close(context.Context) error {
	if e.script.CloseFails {
		return ErrClose
	}
	return nil
}
