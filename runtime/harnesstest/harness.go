package harnesstest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// The harness level: every scenario through the harness.Adapter and
// harness.Executor interfaces, as the daemon calls them. Each capability
// field is decided here once: declared true runs its acceptance scenario,
// declared false its refusal (or, for what a Harness reports rather than
// does on request, the check that it never reports it).

// alwaysRequired are the capabilities Core requires of every execution
// (daemon-protocol.txt:34): a kind that declares one of them false can
// never be placed, so the kit fails it rather than checking a refusal.
var alwaysRequired = []string{"streaming", "steering", "durable_turns", "durable_input_receipts", "preparation",
	"execution_controls", "tool_observations"}

func (k *kit) harnessLevel(t *testing.T) {
	for _, c := range alwaysRequired {
		if !k.declared(c) {
			k.report.add(Outcome{Name: c + "/required", Capability: c, Level: "harness",
				Note: "Core requires it for every execution (daemon-protocol.txt:34): no Turn can be placed on this kind"})
		}
	}

	k.textScenarios(t)
	k.run(t, "harness", "cancellation", "cancellation", k.cancellation)

	k.either(t, "streaming", k.streaming, k.streamingAbsent)
	k.either(t, "durable_turns", k.connectionLost, nil)
	k.either(t, "preparation", k.preparation, nil)
	k.either(t, "execution_controls", k.controls, nil)
	k.either(t, "tool_observations", k.toolObservations, k.refusedBy("tool_observations", func(c *wire.PromptRequest) { c.ObserveToolObservations = true }))
	k.either(t, "message_items", k.messageItems, k.refusedBy("message_items", func(c *wire.PromptRequest) { c.ObserveMessages = true }))
	k.either(t, "usage", k.usage, k.usageAbsent)

	if k.declared("steering") {
		k.run(t, "harness", "steering", "steering", k.steering)
		if k.declared("durable_input_receipts") {
			k.run(t, "harness", "durable_input_receipts", "durable_input_receipts", k.receipts)
		}
	} else {
		k.run(t, "harness", "steering/refused", "steering", func(t *testing.T) {
			k.steerRefused(t, "steering/refused", "steering", text(steered))
		})
	}
	// An image in active input is carried like one in the Turn's input when
	// message_images is declared; otherwise a steering Harness refuses it.
	if k.declared("steering") && !k.declared("message_images") {
		k.run(t, "harness", "steering/image_refused", "message_images", func(t *testing.T) {
			in := wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: "look: "}, kitImage}}}
			k.steerRefused(t, "steering/image_refused", "message_images", in)
		})
	}

	k.either(t, "permissions", func(t *testing.T) { k.permissions(t) }, k.answerRefused("permissions"))
	k.behaviour(t, "withdrawal", k.cfg.Withdrawal, k.withdrawal, absentIn[harness.Withdrawal](true))
	k.behaviour(t, "user_choice", k.cfg.UserChoice, k.userChoice, absentIn[wire.PromptForUserChoice](false))
	k.behaviour(t, "thinking", k.cfg.Thinking, k.thinking, absentIn[wire.Thinking](false))

	k.either(t, "function_tools", k.functionTools, k.refusedBy("function_tools", func(c *wire.PromptRequest) { c.FunctionTools = lookupTool }))
	switch {
	case k.declared("function_tools"):
		declared := k.declared("function_result_images")
		name := "function_result_images"
		if !declared {
			name += "/refused"
		}
		k.run(t, "harness", name, "function_result_images", func(t *testing.T) { k.functionResultImages(t, declared) })
	case k.declared("function_result_images"):
		k.report.add(Outcome{Name: "function_result_images", Capability: "function_result_images", Level: "harness",
			Note: "declared without function_tools: no function result can ever carry an image"})
	default:
		// No function call is ever answered: the function_tools refusal
		// covers every result, with or without an image.
		k.run(t, "harness", "function_result_images/refused", "function_result_images",
			k.refusedBy("function_result_images", func(c *wire.PromptRequest) { c.FunctionTools = lookupTool }))
	}

	k.either(t, "structured_output", k.structured, k.refusedBy("structured_output", func(c *wire.PromptRequest) {
		c.ExecutionControls = controlsOf(c)
		c.ExecutionControls.OutputFormat = &wire.OutputFormat{Type: wire.OutputFormatJSONSchema, Schema: wire.NativeJSON(`{"type":"object"}`)}
	}))
	k.either(t, "web_search_control", k.nativeOnly("web_search_control", func(c *wire.PromptRequest) {
		c.ExecutionControls = controlsOf(c)
		c.ExecutionControls.WebSearch = wire.WebSearchLive
	}), k.refusedBy("web_search_control", func(c *wire.PromptRequest) {
		c.ExecutionControls = controlsOf(c)
		c.ExecutionControls.WebSearch = wire.WebSearchLive
	}))
	k.either(t, "text_verbosity", k.nativeOnly("text_verbosity", func(c *wire.PromptRequest) {
		c.ExecutionControls = controlsOf(c)
		c.ExecutionControls.TextVerbosity = wire.TextVerbosityLow
	}), k.refusedBy("text_verbosity", func(c *wire.PromptRequest) {
		c.ExecutionControls = controlsOf(c)
		c.ExecutionControls.TextVerbosity = wire.TextVerbosityHigh
	}))
	disablePTC := func(c *wire.PromptRequest) {
		c.ExecutionControls = controlsOf(c)
		c.ExecutionControls.DisableProgrammaticToolCalling = true
	}
	k.either(t, "programmatic_tool_calling_disable", k.nativeOnly("programmatic_tool_calling_disable", disablePTC), k.refusedBy("programmatic_tool_calling_disable", disablePTC))

	k.either(t, "resume", k.resume, k.refusedBy("resume", func(c *wire.PromptRequest) { c.AgentSessionID = "kit-unknown-native-session" }))
	k.either(t, "native_session_recovery", k.recovery, k.refusedBy("native_session_recovery", func(c *wire.PromptRequest) { c.RequireExistingNativeSession = true }))

	k.environments(t)

	// What a Harness does only when Core asks and this kit can only see
	// natively: a hook of the capability's own must arrange it and verify
	// it (Scenario.Verify), or the scenario fails.
	for _, g := range []struct {
		name string
		ask  func(*wire.PromptRequest)
	}{
		{"tool_search", func(c *wire.PromptRequest) { c.ToolSearch = true; c.FunctionTools = lookupTool }},
		{"subagent_observations", func(c *wire.PromptRequest) { c.ObserveSubagentIdentities, c.DisableSubagents = true, false }},
		{"workspace_authoring", func(c *wire.PromptRequest) { c.WorkspaceAuthoring = true }},
	} {
		k.either(t, g.name, k.nativeOnly(g.name, g.ask), k.refusedBy(g.name, g.ask))
	}
	// HTTP MCP servers: the kit serves them itself (mcp.go).
	k.either(t, "mcp_http_tools", k.mcpTools, k.refusedBy("mcp_http_tools", kitMCP(false, false)))
	k.either(t, "mcp_http_required", k.mcpRequired, k.refusedBy("mcp_http_required", kitMCP(true, false)))
	k.either(t, "mcp_http_bearer_auth", k.mcpBearer, k.refusedBy("mcp_http_bearer_auth", kitMCP(false, true)))
	// subagent_control is asked of every Turn of an Agent without
	// multi-agent (wire.ApplyOptIns); its refusal is checked when it is
	// false (the kind can then serve only multi-agent Agents).
	// A Harness that never runs subagents honours the disable by
	// construction, so its Verify is optional.
	k.either(t, "subagent_control", k.accepted("subagent_control", func(c *wire.PromptRequest) { c.DisableSubagents = true }),
		k.refusedBy("subagent_control", func(c *wire.PromptRequest) { c.DisableSubagents = true }))

	k.run(t, "harness", "unique_interaction_ids", "text", k.uniqueInteractionIDs)
	k.mu.Lock()
	closeErrs := append([]error(nil), k.closeErrs...)
	k.mu.Unlock()
	assert.Empty(t, closeErrs, "an Executor the kit closed did not close")
}

// either runs capability's acceptance scenario when it is declared true,
// and its refusal check when it is declared false; a nil function means
// that side is checked elsewhere (another level, or alwaysRequired).
func (k *kit) either(t *testing.T, capability string, accept, refuse func(*testing.T)) {
	t.Helper()
	if k.declared(capability) {
		if accept != nil {
			k.run(t, "harness", capability, capability, accept)
		}
		return
	}
	if refuse != nil {
		k.run(t, "harness", capability+"/refused", capability, refuse)
	}
}

// behaviour runs a behaviour's scenario when Config says the Harness has
// it, and otherwise checks, over every Turn run so far, that it never
// showed.
func (k *kit) behaviour(t *testing.T, name string, has bool, accept func(*testing.T), absent func(*testing.T, []*Result)) {
	if has {
		k.run(t, "harness", name, name, accept)
		return
	}
	k.run(t, "harness", name+"/absent", name, func(t *testing.T) { absent(t, k.all()) })
}

// absentIn checks that no Turn emitted a T; skipCancelled passes over the
// Turns the kit cancelled (a Harness may withdraw its open questions when
// it is interrupted, which is not a withdrawal of its own).
func absentIn[T wire.Payload](skipCancelled bool) func(t *testing.T, rs []*Result) {
	return func(t *testing.T, rs []*Result) {
		require.NotEmpty(t, rs, "no Turn ran")
		for _, r := range rs {
			if skipCancelled && r.Cancelled {
				continue
			}
			if got := OfType[T](r); len(got) > 0 {
				t.Errorf("%s: reported %T, which the Harness says it never does (Config)", r.Scenario.Name, got[0])
			}
		}
	}
}

// refusedBy checks that a configuration asking for the operation ask sets
// is refused as unsupported, before any native call (daemon-protocol.txt:27),
// by NewExecutor or at the latest by Run.
func (k *kit) refusedBy(capability string, ask func(*wire.PromptRequest)) func(*testing.T) {
	return func(t *testing.T) {
		s := k.scenario(t, capability+"/refused", capability, Plan{{Say: []string{"This is never said."}}}, nil, func(s *Scenario) {
			ask(&s.Config)
			s.Refused = true
		})
		before := k.nativeCalls()
		r, _ := k.turn(s, nil, drive{})
		err := r.Prepared
		if err == nil {
			err = r.Err
		}
		require.True(t, r.Returned, "the refused Turn did not return")
		assert.ErrorIs(t, err, harness.ErrUnsupportedOperation, "the configuration is refused as unsupported")
		want := harness.CheckConfiguration(k.caps, s.Config)
		var got, exp *harness.UnsupportedError
		if errors.As(err, &got) && errors.As(want, &exp) {
			assert.Equal(t, exp.Capability, got.Capability, "the refusal names the capability the request needs")
		}
		assert.Empty(t, OfType[wire.Delta](r), "a refused Turn says nothing")
		k.noNativeCall(t, before)
	}
}

// answerRefused checks that an answer the declaration does not take is
// refused as unsupported before the Executor looks at its Run.
func (k *kit) answerRefused(capability string) func(*testing.T) {
	return func(t *testing.T) {
		s := k.scenario(t, capability+"/refused", capability, Plan{{Say: []string{"Nothing to ask."}}}, nil, nil)
		r, exe := k.turn(s, nil, drive{keep: true})
		completed(t, r)
		defer k.close(t, exe)
		dec, ok := exe.(harness.Decider)
		if !ok {
			return // the Executor takes no answer at all
		}
		yes := true
		ctx, cancel := k.deadline()
		defer cancel()
		before := k.nativeCalls()
		err := dec.Decide(ctx, r.RunID, harness.Answer{InteractionID: "kit-never-asked", Permission: &wire.PermissionDecision{DeliveryID: "kit", Approved: &yes}})
		assert.ErrorIs(t, err, harness.ErrUnsupportedOperation, "a permission decision is refused as unsupported")
		k.noNativeCall(t, before)
	}
}

// streamingAbsent: a Harness that does not stream reports its text once,
// in done.
func (k *kit) streamingAbsent(t *testing.T) {
	plan := Plan{{Say: []string{"all ", "at ", "once"}}}
	s := k.scenario(t, "streaming/absent", "streaming", plan, nil, nil)
	r, _ := k.turn(s, nil, drive{})
	completed(t, r)
	k.checkText(t, r, plan.Text())
}

// usageAbsent: a Harness that does not report usage sends no usage frame
// and no usage in done.
func (k *kit) usageAbsent(t *testing.T) {
	u := wire.Usage{Tokens: wire.NewTokenUsage(3, 0, 2, 0, 5)}
	plan := Plan{{Say: []string{"Uncounted."}}, {Usage: []wire.Usage{u}}}
	s := k.scenario(t, "usage/absent", "usage", plan, nil, nil)
	r, _ := k.turn(s, nil, drive{})
	completed(t, r)
	assert.Empty(t, OfType[wire.Usage](r), "usage frames from a Harness that does not declare usage")
	assert.True(t, usageZero(r.Done.Usage), "done carries usage although the Harness does not declare it")
}

// cancellation: the kit cancels a Turn mid-stream; Run returns only once
// the native work settled (its receipt proves native settlement,
// daemon-protocol.txt:146), with no error, nothing said after it returned,
// and the Executor closes.
func (k *kit) cancellation(t *testing.T) {
	plan := Plan{{Say: []string{"Working on it."}}, {Hang: true}}
	s := k.scenario(t, "cancellation", "cancellation", plan, nil, nil)
	r, exe := k.turn(s, nil, drive{cancelAt: "Working on it.", keep: true})
	defer k.close(t, exe)
	returned(t, r)
	require.True(t, r.Cancelled, "the Turn never said the text the kit cancels at (got %q)", r.Text())
	assert.NoError(t, r.Err, "a cancellation that settled returns the partial done, not an error")
	assert.Equal(t, "Working on it.", r.Text(), "nothing streamed past the cancellation")
	verify(t, r, false)
}

// connectionLost (durable_turns): the connection is gone from the first
// event on (every emit fails): the Run settles its native work and
// returns, and the Executor still closes (daemon-protocol.txt:157-158).
func (k *kit) connectionLost(t *testing.T) {
	plan := Plan{{Say: []string{"Is anyone there?"}}, {Hang: true}}
	s := k.scenario(t, "durable_turns", "durable_turns", plan, nil, nil)
	r, _ := k.turn(s, nil, drive{emitFails: true})
	require.NoError(t, r.Prepared)
	require.True(t, r.Returned, "Run did not return after its emits failed: the Turn would hold its Executor forever")
	assert.NotEmpty(t, r.Events, "the Turn emitted nothing, so the lost connection was never seen")
}

// next builds a scenario that runs on prev's Executor (the same Session
// and configuration).
func (k *kit) next(t *testing.T, prev *Scenario, name, capability string, plan Plan, input wire.MessageInput) *Scenario {
	t.Helper()
	return k.scenario(t, name, capability, plan, input, func(s *Scenario) {
		s.SessionID, s.Config, s.WorkspaceDir = prev.SessionID, prev.Config, prev.WorkspaceDir
	})
}

// preparation: NewExecutor prepares without input; the Executor it
// returns runs one Turn after another, as an idle Executor reused for the
// Session's next Turn does (daemon-protocol.txt:114, :118).
func (k *kit) preparation(t *testing.T) {
	first := k.scenario(t, "preparation", "preparation", Plan{{Say: []string{"First turn."}}}, nil, nil)
	r1, exe := k.turn(first, nil, drive{keep: true})
	completed(t, r1)
	k.checkText(t, r1, "First turn.")
	second := k.next(t, first, "preparation/second_turn", "preparation", Plan{{Say: []string{"Second turn."}}}, nil)
	r2, _ := k.turn(second, exe, drive{})
	completed(t, r2)
	k.checkText(t, r2, "Second turn.")
	verify(t, r2, false)
}

// controls: the execution_controls object Core sends with every Run is
// accepted (web search disabled, the default verbosity).
func (k *kit) controls(t *testing.T) {
	s := k.scenario(t, "execution_controls", "execution_controls", Plan{{Say: []string{"Controlled."}}}, nil, func(s *Scenario) {
		s.Config.ExecutionControls = &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled, TextVerbosity: wire.TextVerbosityMedium}
	})
	r, _ := k.turn(s, nil, drive{})
	completed(t, r)
	k.checkText(t, r, "Controlled.")
	verify(t, r, false)
}

func controlsOf(c *wire.PromptRequest) *wire.ExecutionControls {
	if c.ExecutionControls == nil {
		return &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled, TextVerbosity: wire.TextVerbosityMedium}
	}
	ec := *c.ExecutionControls
	return &ec
}

// nativeOnly runs a Turn whose configuration asks for capability and
// requires the hook's Verify to prove its native effect.
func (k *kit) nativeOnly(capability string, ask func(*wire.PromptRequest)) func(*testing.T) {
	return k.configured(capability, ask, true)
}

// accepted runs a Turn whose configuration asks for capability; the
// hook's Verify runs when it set one.
func (k *kit) accepted(capability string, ask func(*wire.PromptRequest)) func(*testing.T) {
	return k.configured(capability, ask, false)
}

func (k *kit) configured(capability string, ask func(*wire.PromptRequest), nativeOnly bool) func(*testing.T) {
	return func(t *testing.T) {
		s := k.scenario(t, capability, capability, Plan{{Say: []string{"Configured."}}}, nil, func(s *Scenario) { ask(&s.Config) })
		r, _ := k.turn(s, nil, drive{})
		completed(t, r)
		k.checkText(t, r, "Configured.")
		verify(t, r, nativeOnly)
	}
}

// toolObservations: a tool the native side runs is reported before and
// after under one ID, the after frame with the engine-neutral observation
// when Core opts in (daemon-protocol.txt:56).
func (k *kit) toolObservations(t *testing.T) {
	plan := Plan{{Say: []string{"Listing."}}, {Tool: &Tool{Name: "ls", Args: json.RawMessage(`{"path":"."}`)}}, {Say: []string{" Listed."}}}
	s := k.scenario(t, "tool_observations", "tool_observations", plan, nil, func(s *Scenario) { s.Config.ObserveToolObservations = true })
	r, _ := k.turn(s, nil, drive{})
	completed(t, r)
	calls := OfType[wire.ToolCall](r)
	require.NotEmpty(t, calls, "the tool the native side ran was not reported")
	stages := map[string][]string{}
	var observed int
	for i, c := range calls {
		require.NoError(t, c.Validate(), "tool_call %d", i)
		stages[c.ID] = append(stages[c.ID], c.Stage)
		if c.Stage == wire.ToolStageAfter && c.Observation != nil {
			observed++
		}
	}
	for id, st := range stages {
		assert.Equal(t, wire.ToolStageAfter, st[len(st)-1], "tool %s: its last report is after it ran", id)
	}
	assert.Positive(t, observed, "no tool_call after the tool ran carries the observation Core asked for")
	k.checkText(t, r, plan.Text())
	verify(t, r, false)
}

// resume: a later Executor resumes the native Session the first Turn's
// done reported (agent_session_id, strict_resume), and a strict resume
// of an unknown one fails with a finite error instead of starting afresh
// (daemon-protocol.txt:60, :165).
func (k *kit) resume(t *testing.T) {
	first := k.scenario(t, "resume", "resume", Plan{{Say: []string{"The word is teal."}}}, nil, nil)
	r1, _ := k.turn(first, nil, drive{})
	completed(t, r1)
	require.NotNil(t, r1.Done.Metadata, "done reports no native Session identity to resume")
	id := r1.Done.Metadata.AgentSessionID
	require.NotEmpty(t, id, "done reports no native Session ID to resume")
	second := k.scenario(t, "resume/resumed", "resume", Plan{{Say: []string{"It was teal."}}}, text("Which word?"), func(s *Scenario) {
		s.SessionID, s.Config, s.WorkspaceDir = first.SessionID, first.Config, first.WorkspaceDir
		s.Config.AgentSessionID, s.Config.StrictResume = id, true
	})
	r2, _ := k.turn(second, nil, drive{})
	completed(t, r2)
	k.checkText(t, r2, "It was teal.")
	if r2.Done.Metadata != nil && r2.Done.Metadata.AgentSessionID != "" {
		assert.Equal(t, id, r2.Done.Metadata.AgentSessionID, "the resumed Turn ran in the native Session it resumed")
	}
	verify(t, r2, false)

	k.run(t, "harness", "resume/unknown", "resume", func(t *testing.T) {
		s := k.scenario(t, "resume/unknown", "resume", Plan{{Say: []string{"This is never said."}}}, nil, func(s *Scenario) {
			s.Config.AgentSessionID, s.Config.StrictResume = unknownNativeSession, true
			s.Refused = true
		})
		r, _ := k.turn(s, nil, drive{})
		failedFinitely(t, r)
	})
}

// unknownNativeSession is a native Session ID no Harness has seen; it is a
// canonical UUID, as thread and session IDs are.
const unknownNativeSession = "00000000-0000-4000-8000-00000000dead"

// failedFinitely asserts a Turn failed without saying anything: its
// preparation or Run failed, or it reported an error frame with a code.
func failedFinitely(t *testing.T, r *Result) {
	t.Helper()
	require.True(t, r.Returned, "the Turn did not settle")
	assert.Empty(t, OfType[wire.Delta](r), "the Turn ran instead of failing")
	if r.Prepared != nil || r.Err != nil {
		return
	}
	errs := r.Errors()
	require.NotEmpty(t, errs, "the Turn did not fail")
	assert.NotEmpty(t, errs[0].Code, "the error carries a finite code")
}

// recovery (native_session_recovery): a Session whose first Turn ran but
// whose native Session ID was never recorded continues in that native
// Session on a later Executor (require_existing_native_session, no
// agent_session_id); a Session that never ran fails finitely instead of
// starting afresh.
func (k *kit) recovery(t *testing.T) {
	first := k.scenario(t, "native_session_recovery", "native_session_recovery", Plan{{Say: []string{"Started."}}}, nil, nil)
	r1, _ := k.turn(first, nil, drive{})
	completed(t, r1)
	second := k.scenario(t, "native_session_recovery/recovered", "native_session_recovery", Plan{{Say: []string{"Recovered."}}}, nil, func(s *Scenario) {
		s.SessionID, s.Config, s.WorkspaceDir = first.SessionID, first.Config, first.WorkspaceDir
		s.Config.AgentSessionID, s.Config.RequireExistingNativeSession = "", true
	})
	r2, _ := k.turn(second, nil, drive{})
	completed(t, r2)
	k.checkText(t, r2, "Recovered.")
	if r1.Done.Metadata != nil && r2.Done.Metadata != nil && r1.Done.Metadata.AgentSessionID != "" {
		assert.Equal(t, r1.Done.Metadata.AgentSessionID, r2.Done.Metadata.AgentSessionID, "the recovered Turn ran in the Session's native Session")
	}
	verify(t, r2, false)

	k.run(t, "harness", "native_session_recovery/never_started", "native_session_recovery", func(t *testing.T) {
		s := k.scenario(t, "native_session_recovery/never_started", "native_session_recovery", Plan{{Say: []string{"This is never said."}}}, nil,
			func(s *Scenario) {
				s.Config.RequireExistingNativeSession = true
				s.Refused = true
			})
		r, _ := k.turn(s, nil, drive{})
		failedFinitely(t, r)
	})
}

// environments: a Turn runs in each Environment type the Harness declares
// (the base configuration already ran one of them), and a type it does not
// declare is refused.
func (k *kit) environments(t *testing.T) {
	none := func(c *wire.PromptRequest) { c.DisableExecutionEnvironment, c.LocalEnvironment = true, nil }
	local := func(c *wire.PromptRequest) {
		c.DisableExecutionEnvironment, c.LocalEnvironment = false, &wire.LocalEnvironment{ID: environmentID}
	}
	for _, e := range []struct {
		name string
		ask  func(*wire.PromptRequest)
	}{{"environment_none", none}, {"local_environment", local}} {
		ask := e.ask
		isLocal := e.name == "local_environment"
		k.either(t, e.name, func(t *testing.T) {
			s := k.scenario(t, e.name, e.name, Plan{{Say: []string{"Here."}}}, nil, func(s *Scenario) {
				ask(&s.Config)
				s.WorkspaceDir = ""
				if isLocal {
					s.WorkspaceDir = t.TempDir()
				}
			})
			r, _ := k.turn(s, nil, drive{})
			completed(t, r)
			k.checkText(t, r, "Here.")
			verify(t, r, false)
		}, k.refusedBy(e.name, ask))
	}
}

// kitMCP asks for an HTTP MCP server no Harness can reach: a refusal must
// come before any connection attempt. Its origin matches the Turn's
// Environment, so only the missing capability can refuse it.
func kitMCP(required, bearer bool) func(*wire.PromptRequest) {
	return func(c *wire.PromptRequest) {
		token := ""
		if bearer {
			token = "kit-bearer-token"
		}
		c.MCPHTTPServers = &[]wire.MCPHTTPServer{mcpEntry(c, "http://127.0.0.1:9/mcp", required, token, nil)}
	}
}
