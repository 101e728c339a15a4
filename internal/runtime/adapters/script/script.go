// Package script is the controlled Harness adapter the contract scenarios
// run: each Turn plays a fixed list of steps (deltas, thinking, usage, tool
// calls, errors, permission requests, user-choice questions, function
// calls, active input, delays, failures, hangs, held preparations and
// cancellations), so a scenario can say exactly what the native side does
// without a model.
//
// Its declaration is truthful (Honoured): it declares what it implements —
// item IDs and output_message frames when Core opts in, strict resume of
// the native Sessions it reports, recovery, explicit rejection of images —
// and false for the rest, and the conformance kit
// (runtime/harnesstest) proves it.
package script

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Kind is the agent kind the adapter declares unless Script.Kind says otherwise.
const Kind = "script"

// Step is one thing a Turn does. Exactly one member is set (Withdraw goes
// with Permission).
type Step struct {
	// Delta streams a text fragment. Consecutive deltas are one native
	// message: when Core opts in with observe_messages they carry its item
	// ID, and output_message frames report its start and completion.
	Delta    string         `json:"delta,omitempty"`
	Thinking string         `json:"thinking,omitempty"`
	Usage    *wire.Usage    `json:"usage,omitempty"`
	ToolCall *wire.ToolCall `json:"tool_call,omitempty"`
	// Echo streams the Turn's input: each text part as one delta, in
	// order, with a blank line between messages.
	Echo bool `json:"echo,omitempty"`
	// Error emits an error frame (the Run then ends with done).
	Error string `json:"error,omitempty"`
	// Delay waits (cancellation ends it early), written as a duration
	// string ("2s").
	Delay Duration `json:"delay,omitempty"`
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
	// Withdraw, with Permission, asks the question and withdraws it at
	// once (permission_cancel: the Harness resolved it itself) instead of
	// waiting; the content records "[id:withdrawn]".
	Withdraw bool `json:"withdraw,omitempty"`
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
	// Capabilities narrows the declaration: a capability it sets false is
	// declared false (and refused before the script plays), one it sets
	// true is declared only if the adapter honours it (Honoured).
	//
	// decision: an override can never make the adapter claim an operation
	// it does not implement (daemon-protocol.txt:27: the declaration
	// describes what the Runtime can do).
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
	// SessionID is the native Session identity done reports; it exists,
	// so a configuration may resume it (session.go).
	SessionID string `json:"session_id,omitempty"`
	// Input is the active input mode (InputAccept when empty).
	Input string `json:"input,omitempty"`
	// SessionsFile, when set, keeps the Sessions that ran a Turn (what
	// require_existing_native_session recovers) in that file, so a
	// restarted Runtime still recovers them; without it they are known to
	// this process only.
	SessionsFile string `json:"sessions_file,omitempty"`
}

// Honoured is the declaration of what the adapter implements, each field
// decided by name (a field added to spec/capabilities.yaml fails to
// validate here until it is decided).
func Honoured() wire.AgentKindCapabilities {
	const yes, no = wire.Supported, wire.Unsupported
	return wire.AgentKindCapabilities{
		Streaming:   yes, // Delta and Echo steps
		Permissions: yes, // Permission (and Withdraw) and Choice steps
		// Usage steps are passed on as written; the script's author writes
		// the cumulative snapshots.
		Usage:                 yes,
		Resume:                yes, // strict resume of the native Sessions it reports (session.go)
		SubagentObservations:  no,  // a script has no child agents to observe
		NativeSessionRecovery: yes, // session.go
		WorkspaceAuthoring:    no,  // the daemon has no authoring command for it to run
		Steering:              yes, // AwaitInput and the input modes
		MessageItems:          yes, // messages.go
		ToolObservations:      yes, // ToolCall steps carry the observation they are written with
		// The script touches no workspace; the daemon checks the binding
		// and serves reads and exports from its own workspace
		// implementation for any adapter (daemon-protocol.txt:29).
		EnvironmentNone:                yes,
		LocalEnvironment:               yes,
		Preparation:                    yes,
		WorkspaceReadPreparation:       yes,
		WorkspaceOutputExport:          yes,
		ProgrammaticToolCallingDisable: no,
		WebSearchControl:               no,
		// The object is accepted: a script has no web search to disable and
		// no verbosity but its own (medium); structured output is false.
		ExecutionControls:    yes,
		TextVerbosity:        no,
		StructuredOutput:     no,
		ToolSearch:           no,
		MessageImages:        no, // a text-only transport: images are refused, never dropped
		FunctionResultImages: no,
		SubagentControl:      yes, // it never runs subagents, so disabling them holds
		DurableInputReceipts: yes, // written, then accepted (Input modes)
		DurableTurns:         yes,
		FunctionTools:        yes, // Function steps
		MCPHTTPTools:         no,
		MCPHTTPRequired:      no,
		MCPHTTPBearerAuth:    no,
	}
}

// Adapter plays Script.
type Adapter struct {
	mu       sync.Mutex
	script   Script
	sessions sessions
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

// Declaration declares what the adapter honours, narrowed by the script.
func (a *Adapter) Declaration() harness.Declaration {
	s := a.get()
	kind := s.Kind
	if kind == "" {
		kind = Kind
	}
	caps := Honoured()
	if o := s.Capabilities; o != nil {
		for _, f := range wire.CapabilityFields() {
			if *f.Of(o) == wire.Unsupported {
				*f.Of(&caps) = wire.Unsupported
			}
		}
	}
	return harness.Declaration{Kind: kind, Available: true, Version: "script", Capabilities: caps}
}

// ErrPrepare is the native preparation failure of PrepareFails.
var ErrPrepare = errors.New("script: native preparation failed")

// NewExecutor prepares an Executor (or fails as scripted). A configuration
// that asks for an operation the declaration does not support is refused
// first, and the native Session it resumes or recovers must exist
// (session.go).
func (a *Adapter) NewExecutor(ctx context.Context, cfg harness.ExecutorConfig) (harness.Executor, error) {
	if err := harness.CheckConfiguration(cfg.Declaration.Capabilities, cfg.Configuration); err != nil {
		return nil, err
	}
	s := a.get()
	native, err := a.sessions.open(s, cfg)
	if err != nil {
		return nil, err
	}
	if s.PrepareFails {
		return nil, ErrPrepare
	}
	if s.HoldPrepare != "" {
		if err := waitFile(ctx, s.HoldPrepare); err != nil {
			return nil, err
		}
	}
	return &executor{script: s, adapter: a, native: native, observe: cfg.Configuration.ObserveMessages, key: recoveryKey(cfg)}, nil
}

type executor struct {
	// script is the one the Executor was prepared with (its close
	// failures); each Turn plays the adapter's script as it is when the
	// Turn starts, so Set reaches a reused idle Executor too.
	script  Script
	adapter *Adapter
	native  string // the native Session the Executor resumed or recovered ("" when none)
	observe bool   // Core opted in with observe_messages
	key     string // the Session's recovery key (sessions.ran)

	mu     sync.Mutex
	turn   *turnState // the running Turn, nil between Turns
	closes int        // close attempts so far
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
