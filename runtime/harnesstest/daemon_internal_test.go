package harnesstest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// counting counts the native preparations of the script adapter: the
// refusals the daemon level checks must start none.
type counting struct {
	*script.Adapter
	n atomic.Int64
}

func (c *counting) NewExecutor(ctx context.Context, cfg harness.ExecutorConfig) (harness.Executor, error) {
	c.n.Add(1)
	return c.Adapter.NewExecutor(ctx, cfg)
}

// scriptHook makes the script adapter play a scenario's plan, keeping the
// declaration narrowed by caps. Its questions get IDs unique within the
// test, as the daemon needs of the questions on one connection.
func scriptHook(a *script.Adapter, caps *wire.AgentKindCapabilities) Hook {
	var ids atomic.Int64
	id := func(prefix string) string { return fmt.Sprintf("%s-%d", prefix, ids.Add(1)) }
	return func(t *testing.T, s *Scenario) {
		var steps []script.Step
		for _, st := range s.Plan {
			switch {
			case st.Say != nil:
				for _, x := range st.Say {
					steps = append(steps, script.Step{Delta: x})
				}
			case st.Hang:
				steps = append(steps, script.Step{Hang: true})
			case st.Ask != nil:
				steps = append(steps, script.Step{Permission: &wire.PermissionRequest{RequestID: id("perm"), Tool: st.Ask.Tool, Title: "run " + st.Ask.Tool}})
			case st.Call != nil:
				steps = append(steps, script.Step{Function: &wire.FunctionCall{CallID: id("call"), Name: st.Call.Name, Arguments: wire.NativeJSON(st.Call.Args)}})
			case st.AwaitInput:
				steps = append(steps, script.Step{AwaitInput: true})
			case st.Fail != "":
				steps = append(steps, script.Step{Fail: st.Fail})
			default:
				t.Fatalf("scriptHook: the test hook plays Say, Hang, Ask, Call, AwaitInput and Fail steps, not %+v", st)
			}
		}
		a.Set(script.Script{Capabilities: caps, Steps: steps, SessionID: "native-session"})
	}
}

// daemonKit is a kit for the script adapter narrowed by the capabilities
// named in off, running only the daemon level.
func daemonKit(t *testing.T, off ...string) *kit {
	var caps *wire.AgentKindCapabilities
	if len(off) > 0 {
		caps = &wire.AgentKindCapabilities{}
		for _, name := range off {
			f, ok := wire.CapabilityFieldByName(name)
			require.True(t, ok, name)
			*f.Of(caps) = wire.Unsupported
		}
	}
	a := &counting{Adapter: script.New(script.Script{Capabilities: caps})}
	cfg := Config{Adapter: a, Default: scriptHook(a.Adapter, caps), NativeCalls: func() int { return int(a.n.Load()) },
		Timeout: 20 * time.Second}
	decl := a.Declaration()
	require.NoError(t, decl.Validate())
	return newKit(cfg, decl)
}

// outcomes runs the daemon level and returns its outcomes by name.
func outcomes(t *testing.T, k *kit) map[string]Outcome {
	t.Run("daemon", func(t *testing.T) { k.daemonLevel(t) })
	t.Log("\n" + k.report.String())
	out := map[string]Outcome{}
	for _, o := range k.report.Scenarios {
		assert.Equal(t, "daemon", o.Level, o.Name)
		out[o.Name] = o
	}
	return out
}

func TestDaemonLevelScriptAdapter(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	got := outcomes(t, daemonKit(t))
	want := map[string]string{
		"daemon/streaming":           "streaming",
		"daemon/cancellation":        "cancellation",
		"daemon/next_turn":           "resume",
		"daemon/permissions/approve": "permissions",
		"daemon/permissions/deny":    "permissions",
		"daemon/steering":            "steering",
		"daemon/function_tools":      "function_tools",
		"daemon/error_then_done":     "text",
		"workspace_read_preparation": "workspace_read_preparation",
		"workspace_output_export":    "workspace_output_export",
		// The script adapter declares function tools but not tool search.
		"daemon/refused_configuration": "tool_search",
	}
	require.Len(t, got, len(want), "the scenarios run: %v", got)
	for name, capability := range want {
		o, ok := got[name]
		if assert.True(t, ok, "%s did not run", name) {
			assert.Equal(t, capability, o.Capability, name)
			assert.True(t, o.Passed, "%s failed", name)
		}
	}
}

func TestDaemonLevelWorkspaceRefused(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	got := outcomes(t, daemonKit(t, "workspace_read_preparation", "workspace_output_export"))
	for _, name := range []string{"daemon/streaming", "daemon/cancellation", "workspace_read_preparation/refused",
		"workspace_output_export/refused", "daemon/refused_configuration"} {
		o, ok := got[name]
		if assert.True(t, ok, "%s did not run", name) {
			assert.True(t, o.Passed, "%s failed", name)
		}
	}
	assert.NotContains(t, got, "workspace_read_preparation")
	assert.NotContains(t, got, "workspace_output_export")
}

// TestDaemonLevelExportRefusedWithReadPreparation: the export is refused
// through a ready read-only preparation of a kind that can read but not
// export; the refused configuration falls to the next unsupported ask.
func TestDaemonLevelExportRefusedWithReadPreparation(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	got := outcomes(t, daemonKit(t, "workspace_output_export", "function_tools"))
	for _, name := range []string{"workspace_read_preparation", "workspace_output_export/refused", "daemon/refused_configuration"} {
		o, ok := got[name]
		if assert.True(t, ok, "%s did not run", name) {
			assert.True(t, o.Passed, "%s failed", name)
		}
	}
	// Tool search needs a function tool, which this kind refuses first.
	assert.Equal(t, "function_tools", got["daemon/refused_configuration"].Capability)
}

// TestDaemonLevelBoundEnvironment: a kind without environment_none runs
// its Turns in the kit's self_hosted Environment, which each scenario's
// daemon binds to the scenario's workspace.
func TestDaemonLevelBoundEnvironment(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	k := daemonKit(t, "environment_none")
	got := outcomes(t, k)
	for _, name := range []string{"daemon/streaming", "daemon/cancellation", "workspace_read_preparation", "workspace_output_export",
		"daemon/refused_configuration"} {
		o, ok := got[name]
		if assert.True(t, ok, "%s did not run", name) {
			assert.True(t, o.Passed, "%s failed", name)
		}
	}
}
