package script_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/runtime/harnesstest"
	"github.com/agentwire/agentwire/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestScriptConformance proves the script adapter's declaration with the
// conformance kit: each Plan becomes the script the next Turn plays.
func TestScriptConformance(t *testing.T) {
	a := &counting{Adapter: script.New(script.Script{})}
	var ids atomic.Int64
	id := func(prefix string) string { return fmt.Sprintf("%s-%d", prefix, ids.Add(1)) }
	hook := func(t *testing.T, s *harnesstest.Scenario) {
		if s.Refused {
			return
		}
		var steps []script.Step
		for _, p := range s.Plan {
			switch {
			case len(p.Say) > 0:
				for _, x := range p.Say {
					steps = append(steps, script.Step{Delta: x})
				}
			case p.Think != "":
				steps = append(steps, script.Step{Thinking: p.Think})
			case p.Echo:
				steps = append(steps, script.Step{Echo: true})
			case p.Tool != nil:
				call := id("tool")
				after := wire.ToolCall{ID: call, Name: p.Tool.Name, Stage: wire.ToolStageAfter, Result: wire.NativeJSON(`{"ok":true}`)}
				if s.Config.ObserveToolObservations {
					after.Observation = &wire.ToolObservation{Kind: "command", Status: "completed", Name: p.Tool.Name}
				}
				steps = append(steps,
					script.Step{ToolCall: &wire.ToolCall{ID: call, Name: p.Tool.Name, Stage: wire.ToolStageBefore, Args: wire.NativeJSON(p.Tool.Args)}},
					script.Step{ToolCall: &after})
			case p.Ask != nil:
				steps = append(steps, script.Step{Permission: &wire.PermissionRequest{RequestID: id("perm"), Tool: p.Ask.Tool, Title: "run " + p.Ask.Tool}})
			case p.Withdraw != nil:
				steps = append(steps, script.Step{Permission: &wire.PermissionRequest{RequestID: id("perm"), Tool: p.Withdraw.Tool, Title: "run " + p.Withdraw.Tool}, Withdraw: true})
			case p.Choice != nil:
				steps = append(steps, script.Step{Choice: &wire.PromptForUserChoice{AskID: id("ask"), Questions: p.Choice.Questions}})
			case p.Call != nil:
				steps = append(steps, script.Step{Function: &wire.FunctionCall{CallID: id("call"), Name: p.Call.Name, Arguments: wire.NativeJSON(p.Call.Args)}})
			case p.AwaitInput:
				steps = append(steps, script.Step{AwaitInput: true})
			case len(p.Usage) > 0:
				for i := range p.Usage {
					steps = append(steps, script.Step{Usage: &p.Usage[i]})
				}
			case p.Fail != "":
				steps = append(steps, script.Step{Fail: p.Fail})
			case p.Hang:
				steps = append(steps, script.Step{Hang: true})
			default:
				t.Fatalf("the script adapter cannot play step %+v", p)
			}
		}
		// Each Session has its own native identity, which done reports and
		// a later Executor resumes.
		a.Set(script.Script{Steps: steps, SessionID: "native-" + s.SessionID})
	}
	report := harnesstest.Run(t, harnesstest.Config{
		Adapter: a, Default: hook,
		Thinking: true, UserChoice: true, Withdrawal: true,
		NativeCalls: func() int { return int(a.native.Load()) },
	})
	if report.Passed() != len(report.Scenarios) {
		t.Errorf("%d of %d scenarios passed", report.Passed(), len(report.Scenarios))
	}
}

// counting counts the script adapter's native operations: each Executor
// it prepared and each Turn that played a step.
type counting struct {
	*script.Adapter
	native atomic.Int64
}

func (c *counting) NewExecutor(ctx context.Context, cfg harness.ExecutorConfig) (harness.Executor, error) {
	exe, err := c.Adapter.NewExecutor(ctx, cfg)
	if err != nil {
		return nil, err
	}
	c.native.Add(1)
	return &countingExecutor{Executor: exe, n: &c.native}, nil
}

type countingExecutor struct {
	harness.Executor
	n *atomic.Int64
}

func (e *countingExecutor) Run(ctx context.Context, turn harness.Turn, emit harness.Emit) (wire.Done, error) {
	var played atomic.Bool
	return e.Executor.Run(ctx, turn, func(ctx context.Context, p wire.Payload) error {
		if !played.Swap(true) {
			e.n.Add(1)
		}
		return emit(ctx, p)
	})
}

func (e *countingExecutor) Steer(ctx context.Context, runID, inputID string, in wire.MessageInput) error {
	return e.Executor.(harness.Steerer).Steer(ctx, runID, inputID, in)
}

func (e *countingExecutor) Decide(ctx context.Context, runID string, a harness.Answer) error {
	return e.Executor.(harness.Decider).Decide(ctx, runID, a)
}
