package claude

import (
	"context"
	"sync"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Active input. Steer writes a user message whose uuid is the input's ID
// while the Turn runs; the write completing is "written"
// (daemon-protocol.txt:143). The CLI queues it (command_lifecycle queued)
// and reports it started when the model takes it: during a tool, with the
// next tool result, in the same Turn; during plain text, after the
// Turn's result, as a follow-up turn with a result of its own, which the
// Run then waits for. Started (or the replay of the message) is
// "accepted". An input the CLI never started by the Turn's end is refused
// with a finite code, never left open.

// turnState is the running Turn's share of the Executor, reached by Steer
// from another goroutine.
type turnState struct {
	runID  string
	caps   wire.AgentKindCapabilities
	notify harness.Notify

	mu        sync.Mutex
	steers    map[string]*steerState // by input ID
	questions map[string]*question   // open permission requests, by interaction ID
	byRequest map[string]*question   // the same, by the CLI's request ID
	ended     bool
}

type steerState struct {
	started, settled bool
}

// Steer writes one active input into the running Turn runID.
func (e *executor) Steer(ctx context.Context, runID, inputID string, in wire.MessageInput) error {
	e.mu.Lock()
	t := e.cur
	e.mu.Unlock()
	if t == nil || t.runID != runID {
		return harness.ErrRunInactive
	}
	if err := harness.CheckSteer(t.caps, in); err != nil {
		return err
	}
	if in.HasImage() {
		// Whatever the snapshot says, images are refused, never dropped.
		return &harness.UnsupportedError{Capability: "message_images", What: "prompt_steer.input"}
	}
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return harness.ErrRunInactive
	}
	t.steers[inputID] = &steerState{}
	t.mu.Unlock()
	if err := e.ch.SendUser(ctx, inputID, textContent(in)); err != nil {
		t.mu.Lock()
		delete(t.steers, inputID)
		t.mu.Unlock()
		return err
	}
	return nil
}

// started reports the input id accepted, once; false for an ID the Turn
// did not steer.
func (t *turnState) started(id string) bool {
	t.mu.Lock()
	s := t.steers[id]
	if s == nil || s.started {
		t.mu.Unlock()
		return s != nil
	}
	s.started, s.settled = true, true
	t.mu.Unlock()
	t.report(harness.InputNotice{InputID: id, Accepted: true})
	return true
}

// queued reports whether an input was written and not yet started: the
// CLI runs it after the current result, as a follow-up.
func (t *turnState) queued() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, s := range t.steers {
		if !s.started {
			return true
		}
	}
	return false
}

// end detaches the Turn: later Steers find it inactive, and inputs the CLI
// never started are refused.
func (t *turnState) end(why string) {
	t.mu.Lock()
	t.ended = true
	var open []string
	for id, s := range t.steers {
		if !s.settled {
			s.settled = true
			open = append(open, id)
		}
	}
	t.mu.Unlock()
	for _, id := range open {
		// decision: an input the Turn ended without starting never reached
		// the model: refused, not unknown (the CLI reports what it starts).
		t.report(harness.InputNotice{InputID: id, Code: wire.SteerCodeRejected, Error: why})
	}
}

func (t *turnState) report(n harness.InputNotice) {
	if t.notify != nil {
		t.notify(n)
	}
}
