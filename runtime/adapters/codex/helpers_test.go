package codex

import (
	"context"
	"sync"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// hcfg is an ExecutorConfig as the daemon builds it from an
// execution_prepare whose configuration has the opt-ins Core sets on every
// Run (wire.ApplyOptIns): observe messages and tool observations, strict
// resume, web search disabled, verbosity medium, subagents disabled.
// workspace "" is an Environment of type none.
func hcfg(a *Adapter, workspace string) harness.ExecutorConfig {
	sid := "6f1f2d7e-5a0b-4c1e-9a43-0d5c1c2b9e01"
	p := wire.PromptRequest{
		AgentKind:               a.Declaration().Kind,
		AgentStateKey:           wire.AgentStateKey(sid),
		ExecutionControls:       &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled, TextVerbosity: wire.TextVerbosityMedium},
		ObserveMessages:         true,
		ObserveToolObservations: true,
		StrictResume:            true,
		DisableSubagents:        true,
	}
	if workspace == "" {
		p.DisableExecutionEnvironment = true
	}
	return harness.ExecutorConfig{SessionID: sid, Configuration: p, Declaration: a.Declaration(), WorkspaceDir: workspace}
}

// recorder is an Emit that keeps every frame, and lets a test wait for
// one.
type recorder struct {
	mu     sync.Mutex
	frames []wire.Payload
	wake   chan struct{}
	// hook, when set, sees each frame as it is emitted (on the Run's
	// goroutine).
	hook func(wire.Payload)
}

func newRecorder() *recorder { return &recorder{wake: make(chan struct{}, 1)} }

func (r *recorder) emit(_ context.Context, p wire.Payload) error {
	if err := p.Validate(); err != nil {
		panic("the adapter emitted an invalid frame: " + err.Error())
	}
	r.mu.Lock()
	r.frames = append(r.frames, p)
	hook := r.hook
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	if hook != nil {
		hook(p)
	}
	return nil
}

func (r *recorder) all() []wire.Payload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]wire.Payload(nil), r.frames...)
}

// await returns the first frame for which match is true, waiting under ctx.
func (r *recorder) await(ctx context.Context, match func(wire.Payload) bool) (wire.Payload, bool) {
	for {
		for _, f := range r.all() {
			if match(f) {
				return f, true
			}
		}
		select {
		case <-r.wake:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// of returns the frames of type T, in order.
func of[T wire.Payload](r *recorder) []T {
	var out []T
	for _, f := range r.all() {
		if v, ok := f.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func harnessAnswer(id string, d *wire.PermissionDecision) harness.Answer {
	return harness.Answer{InteractionID: id, Permission: d}
}
