package exec_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/adapters/exec"
	"github.com/agentwire/agentwire/runtime/harnesstest"
	"github.com/agentwire/agentwire/wire"
)

// TestExecEchoAgentConformance runs the Harness conformance kit against the
// exec adapter with examples/echo-agent: every capability its
// capabilities.json declares true passes its scenario, every one it
// declares false is refused before any process starts.
//
// The native side is driven by its input: the hook puts the directives
// that make echo-agent follow the scenario's plan in a message of its own
// in front of the scenario's input, which is kept whole (echo-agent takes
// the directives off its first text and echoes the rest).
func TestExecEchoAgentConformance(t *testing.T) {
	// The command is a wrapper that counts the processes the adapter
	// starts, then becomes echo-agent: the kit checks that no refusal
	// starts one. The adapter waits for the process to exit before Run
	// returns, so a count read between Turns is complete.
	dir := t.TempDir()
	counter := filepath.Join(dir, "starts")
	wrapper := filepath.Join(dir, "echo-agent")
	body := fmt.Sprintf("#!/bin/sh\necho started >> %s\nexec %s \"$@\"\n", shellQuote(counter), shellQuote(echoAgent))
	require.NoError(t, os.WriteFile(wrapper, []byte(body), 0o755))
	starts := func() int {
		b, err := os.ReadFile(counter)
		if os.IsNotExist(err) {
			return 0
		}
		require.NoError(t, err)
		return bytes.Count(b, []byte("\n"))
	}

	a, err := exec.New(exec.Config{Kind: "echo", Command: wrapper, CapabilityFile: capFile, Grace: 2 * time.Second})
	require.NoError(t, err)

	hook := func(t *testing.T, s *harnesstest.Scenario) { s.Input = echoAgentInput(t, s) }
	report := harnesstest.Run(t, harnesstest.Config{
		Adapter: a,
		Default: hook,
		Hooks: map[string]harnesstest.Hook{
			// echo-agent has no subagents at all: disable_subagents asks
			// for nothing it could do otherwise. What the native side
			// shows is that the Turn ran as planned and nothing else: no
			// tool, no question, no other text.
			"subagent_control": func(t *testing.T, s *harnesstest.Scenario) {
				hook(t, s)
				s.Verify = func(t *testing.T, r *harnesstest.Result) {
					assert.Equal(t, s.Plan.Text(), r.Text(), "echo-agent said only what the plan says")
					assert.Empty(t, harnesstest.OfType[wire.ToolCall](r), "echo-agent ran no tool")
					assert.False(t, r.Failed())
				}
			},
		},
		// echo-agent never reports reasoning, never asks a user choice and
		// never withdraws its own permission request.
		Thinking:    false,
		UserChoice:  false,
		Withdrawal:  false,
		NativeCalls: starts,
		Timeout:     30 * time.Second,
	})
	assert.Positive(t, report.Passed())
	// The count the refusals were checked against is a real one.
	assert.Positive(t, starts(), "the wrapper counted no process")
}

// echoAgentInput is the scenario's input with, in front of it, a message
// holding the directives that make echo-agent follow s.Plan
// (examples/echo-agent/main.go).
func echoAgentInput(t *testing.T, s *harnesstest.Scenario) wire.MessageInput {
	t.Helper()
	var ds []string
	cannot := func(what string) {
		if !s.Refused {
			t.Fatalf("echo-agent cannot %s (scenario %s)", what, s.Name)
		}
	}
	for _, st := range s.Plan {
		switch {
		case st.Say != nil:
			for _, x := range st.Say {
				if strings.Contains(x, "\n") {
					cannot(fmt.Sprintf("say a line break with /say (%q)", x))
				}
				if x != "" {
					ds = append(ds, "/say "+x)
				}
			}
		case st.Echo:
			ds = append(ds, "/echo")
		case st.Tool != nil:
			// echo-agent has one tool, echo; run on nothing it says nothing.
			ds = append(ds, "/tool")
		case st.Ask != nil:
			// Denied, echo-agent says so and ends the Turn.
			ds = append(ds, "/ask")
		case st.AwaitInput:
			// It accepts the input, runs echo on it and says its text.
			ds = append(ds, "/await")
		case st.Fail != "":
			ds = append(ds, "/fail "+st.Fail)
		case st.Hang:
			ds = append(ds, "/wait")
		case st.Usage != nil:
			// echo-agent reports no usage (usage: false); the kit checks
			// that none is reported.
		case st.Think != "":
			cannot("report reasoning")
		case st.Withdraw != nil:
			cannot("withdraw a permission request")
		case st.Choice != nil:
			cannot("ask a user choice")
		case st.Call != nil:
			cannot("call a function")
		case st.JSON != "":
			cannot("answer structured output")
		default:
			t.Fatalf("scenario %s: a plan step echo-agent's hook does not know: %+v", s.Name, st)
		}
	}
	if len(ds) == 0 {
		ds = []string{"/say "} // an empty plan: say nothing, ask nothing
	}
	first := wire.InputMessage{Content: []wire.InputContent{{Type: wire.ContentText, Text: strings.Join(ds, "\n")}}}
	return append(wire.MessageInput{first}, s.Input...)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
