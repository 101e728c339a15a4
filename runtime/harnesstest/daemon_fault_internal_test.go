package harnesstest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// The daemon level's interactive scenarios fail when the adapter breaks
// what they prove. A failing scenario fails the test that runs it, so each
// fault runs the daemon level in a child process (this test binary again)
// and the parent reads the kit's report from its output.

// faultEnv names the fault the child injects.
const faultEnv = "AGENTWIRE_HARNESSTEST_FAULT"

func TestDaemonLevelCatchesFaults(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	if fault := os.Getenv(faultEnv); fault != "" {
		outcomes(t, faultyKit(t, fault))
		return
	}
	report := regexp.MustCompile(`(pass|FAIL)\s+daemon\s+(\S+)`)
	for fault, failing := range map[string][]string{
		// Answers are never applied: the decisions and the function
		// result get receipts applied=false.
		"decide": {"daemon/permissions/approve", "daemon/permissions/deny", "daemon/function_tools"},
		// The Harness refuses the steered input after its write.
		"steer-rejected": {"daemon/steering"},
		// More of the answer streams after the error.
		"delta-after-error": {"daemon/error_then_done"},
	} {
		t.Run(fault, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestDaemonLevelCatchesFaults$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), faultEnv+"="+fault)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "the child with fault %s should fail: %v\n%s", fault, err, out)
			got := map[string]string{}
			for _, m := range report.FindAllStringSubmatch(string(out), -1) {
				got[m[2]] = m[1]
			}
			require.Contains(t, got, "daemon/streaming", "no report in the child's output:\n%s", out)
			for name, mark := range got {
				want := "pass"
				for _, f := range failing {
					if f == name {
						want = "FAIL"
					}
				}
				assert.Equal(t, want, mark, "%s under fault %s", name, fault)
			}
			for _, f := range failing {
				assert.Contains(t, got, f, "%s did not run", f)
			}
		})
	}
}

// faultyKit is daemonKit's script adapter with fault injected.
func faultyKit(t *testing.T, fault string) *kit {
	a := script.New(script.Script{})
	f := &faulty{Adapter: a, fault: fault}
	cfg := Config{Adapter: f, Default: scriptHook(a, nil), Timeout: 20 * time.Second}
	decl := f.Declaration()
	require.NoError(t, decl.Validate())
	return newKit(cfg, decl)
}

type faulty struct {
	*script.Adapter
	fault string
}

func (f *faulty) NewExecutor(ctx context.Context, cfg harness.ExecutorConfig) (harness.Executor, error) {
	exe, err := f.Adapter.NewExecutor(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &faultyExecutor{Executor: exe, fault: f.fault}, nil
}

type faultyExecutor struct {
	harness.Executor
	fault string
}

func (e *faultyExecutor) Run(ctx context.Context, turn harness.Turn, emit harness.Emit) (wire.Done, error) {
	if notify := turn.Notify; e.fault == "steer-rejected" && notify != nil {
		turn.Notify = func(n harness.InputNotice) {
			if n.Accepted {
				n = harness.InputNotice{InputID: n.InputID, Code: wire.SteerCodeRejected, Error: "faulty: refused"}
			}
			notify(n)
		}
	}
	var seq uint64
	done, err := e.Executor.Run(ctx, turn, func(ctx context.Context, p wire.Payload) error {
		if d, ok := p.(wire.Delta); ok {
			seq = d.Sequence
		}
		return emit(ctx, p)
	})
	if err != nil && e.fault == "delta-after-error" {
		// The Harness reports its failure itself, then says more.
		if eerr := emit(ctx, wire.ErrorFrame{Error: err.Error()}); eerr != nil {
			return done, eerr
		}
		return done, emit(ctx, wire.Delta{Delta: " and more", Sequence: seq + 1})
	}
	return done, err
}

func (e *faultyExecutor) Steer(ctx context.Context, runID, inputID string, in wire.MessageInput) error {
	return e.Executor.(harness.Steerer).Steer(ctx, runID, inputID, in)
}

func (e *faultyExecutor) Decide(ctx context.Context, runID string, a harness.Answer) error {
	if e.fault == "decide" {
		return errors.New("faulty: the answer was dropped")
	}
	return e.Executor.(harness.Decider).Decide(ctx, runID, a)
}
