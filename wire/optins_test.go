package wire

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// The opt-in table of the protocol, as the JSON members each row sets.
var optInRows = map[string][]string{
	"execution_controls":                             {"execution_controls"},
	"observe_tool_observations":                      {"observe_tool_observations"},
	"observe_messages":                               {"observe_messages"},
	"observe_subagent_identities, disable_subagents": {"observe_subagent_identities", "disable_subagents"},
	"disable_execution_environment":                  {"disable_execution_environment"},
	"local_environment":                              {"local_environment"},
	"strict_resume, require_existing_native_session": {"strict_resume", "require_existing_native_session"},
}

func optInTableFields() []string {
	var all []string
	for _, fields := range optInRows {
		all = append(all, fields...)
	}
	sort.Strings(all)
	return all
}

// members encodes v and returns its JSON members.
func optInMembers(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// changed lists the members that differ between two requests, sorted.
func optInChanged(t *testing.T, a, b PromptRequest) []string {
	t.Helper()
	ma, mb := optInMembers(t, a), optInMembers(t, b)
	var out []string
	for k, v := range ma {
		w, ok := mb[k]
		if !ok || !optInJSONEqual(v, w) {
			out = append(out, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func optInJSONEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// baseSession is a Session on an Environment of type none, single agent,
// on a Harness that declares nothing optional.
func optInBaseSession() SessionConfig {
	return SessionConfig{Environment: EnvironmentTypeNone, Capabilities: optInCaps(false)}
}

func optInCaps(messageItems bool) AgentKindCapabilities {
	var c AgentKindCapabilities
	for _, f := range CapabilityFields() {
		*f.Of(&c) = Unsupported
	}
	c.MessageItems = Support(messageItems)
	return c
}

func optInHostedSession(id string) SessionConfig {
	s := optInBaseSession()
	s.Environment = EnvironmentTypeOpenAIHosted
	s.Binding = &LocalEnvironment{ID: id, CapabilitySources: &CapabilitySources{Directories: []string{"/workspace/skills"}}}
	return s
}

// apply runs ApplyOptIns on a copy of req.
func optInApply(t *testing.T, req PromptRequest, s SessionConfig) PromptRequest {
	t.Helper()
	require.NoError(t, ApplyOptIns(&req, s))
	return req
}

// requireRowChanges applies a and b to the same request and requires that
// exactly the row's members differ.
func optInRowChanges(t *testing.T, row string, a, b SessionConfig) (PromptRequest, PromptRequest) {
	t.Helper()
	ra, rb := optInApply(t, PromptRequest{}, a), optInApply(t, PromptRequest{}, b)
	want := append([]string(nil), optInRows[row]...)
	sort.Strings(want)
	require.Equal(t, want, optInChanged(t, ra, rb), "varying the input of row %q must change exactly its members", row)
	return ra, rb
}

func TestOptInsRowByRow(t *testing.T) {
	t.Run("execution_controls", func(t *testing.T) {
		// Always: present on every Run, web search disabled, default medium.
		r := optInApply(t, PromptRequest{}, optInBaseSession())
		require.Equal(t, &ExecutionControls{WebSearch: WebSearchDisabled, TextVerbosity: TextVerbosityMedium}, r.ExecutionControls)

		agent := optInBaseSession()
		agent.TextVerbosity = TextVerbosityHigh
		agent.DisableProgrammaticToolCalling = true
		agent.OutputSchema = NativeJSON(`{"type":"object"}`)
		_, rb := optInRowChanges(t, "execution_controls", optInBaseSession(), agent)
		require.Equal(t, &ExecutionControls{
			WebSearch: WebSearchDisabled, TextVerbosity: TextVerbosityHigh, DisableProgrammaticToolCalling: true,
			OutputFormat: &OutputFormat{Type: OutputFormatJSONSchema, Schema: NativeJSON(`{"type":"object"}`)},
		}, rb.ExecutionControls)
		agent.OutputSchema[0] = '['
		require.Equal(t, byte('{'), rb.ExecutionControls.OutputFormat.Schema[0], "the schema is copied, not aliased")
	})

	t.Run("observe_tool_observations", func(t *testing.T) {
		// Always: no input of the table turns it off.
		for _, s := range []SessionConfig{optInBaseSession(), optInHostedSession(prepTestEnvID)} {
			r := optInApply(t, PromptRequest{}, s)
			require.True(t, r.ObserveToolObservations)
		}
		require.Contains(t, optInChanged(t, PromptRequest{}, optInApply(t, PromptRequest{}, optInBaseSession())), "observe_tool_observations")
	})

	t.Run("observe_messages", func(t *testing.T) {
		with := optInBaseSession()
		with.Capabilities = optInCaps(true)
		ra, rb := optInRowChanges(t, "observe_messages", optInBaseSession(), with)
		require.False(t, ra.ObserveMessages)
		require.True(t, rb.ObserveMessages)
	})

	t.Run("observe_subagent_identities, disable_subagents", func(t *testing.T) {
		multi := optInBaseSession()
		multi.MultiAgentEnabled = true
		single, enabled := optInRowChanges(t, "observe_subagent_identities, disable_subagents", optInBaseSession(), multi)
		require.False(t, single.ObserveSubagentIdentities)
		require.True(t, single.DisableSubagents)
		require.True(t, enabled.ObserveSubagentIdentities)
		require.False(t, enabled.DisableSubagents)
	})

	t.Run("disable_execution_environment", func(t *testing.T) {
		none := optInApply(t, PromptRequest{}, optInBaseSession())
		require.True(t, none.DisableExecutionEnvironment)
		for _, env := range []EnvironmentType{EnvironmentTypeOpenAIHosted, EnvironmentTypeSelfHosted} {
			s := optInHostedSession(prepTestEnvID)
			s.Environment = env
			r := optInApply(t, PromptRequest{}, s)
			require.False(t, r.DisableExecutionEnvironment, env)
			// none and a local type differ in exactly the two environment rows.
			want := append(append([]string(nil), optInRows["disable_execution_environment"]...), optInRows["local_environment"]...)
			sort.Strings(want)
			require.Equal(t, want, optInChanged(t, none, r))
		}
	})

	t.Run("local_environment", func(t *testing.T) {
		require.Nil(t, optInApply(t, PromptRequest{}, optInBaseSession()).LocalEnvironment)
		self := optInHostedSession("0b9e7a41-6c2d-4f38-a915-2e7d4c8b6f10")
		self.Environment = EnvironmentTypeSelfHosted
		hosted, selfR := optInRowChanges(t, "local_environment", optInHostedSession(prepTestEnvID), self)
		require.Equal(t, prepTestEnvID, hosted.LocalEnvironment.ID)
		require.Equal(t, self.Binding, selfR.LocalEnvironment, "the exact binding")
		self.Binding.CapabilitySources.Directories[0] = "/elsewhere"
		require.Equal(t, "/workspace/skills", selfR.LocalEnvironment.CapabilitySources.Directories[0], "the binding is copied, not aliased")
	})

	t.Run("strict_resume, require_existing_native_session", func(t *testing.T) {
		recovered := optInBaseSession()
		recovered.StartedTurn = true
		fresh := optInApply(t, PromptRequest{}, optInBaseSession())
		rec := optInApply(t, PromptRequest{}, recovered)
		require.True(t, fresh.StrictResume, "always strict")
		require.True(t, rec.StrictResume, "always strict")
		require.False(t, fresh.RequireExistingNativeSession)
		require.True(t, rec.RequireExistingNativeSession)
		require.Equal(t, []string{"require_existing_native_session"}, optInChanged(t, fresh, rec))

		recorded := recovered
		recorded.NativeSessionID = "native-1"
		require.False(t, optInApply(t, PromptRequest{}, recorded).RequireExistingNativeSession,
			"a recorded native Session is resumed, not recovered")
		require.Contains(t, optInChanged(t, PromptRequest{}, fresh), "strict_resume")
	})

	t.Run("durable_receipt on prompt_steer", func(t *testing.T) {
		p := PromptSteer{InputID: "input-1", Input: prepTestInput()}
		before := p
		ApplySteerOptIns(&p)
		require.True(t, p.DurableReceipt)
		p.DurableReceipt = before.DurableReceipt
		require.Equal(t, before, p, "only durable_receipt is set")
	})
}

// ApplyOptIns touches exactly the table's members: every one of them on
// some Session, none other on any Session, and it overwrites stale values.
func TestOptInsTouchOnlyTheTable(t *testing.T) {
	one := 2
	servers := []MCPHTTPServer{{ConnectionOrigin: MCPOriginService, ServerLabel: "l", ServerURL: "https://m.example/"}}
	model := "gpt-5"
	foreign := PromptRequest{
		AgentKind: "codex", MaxConcurrentSubagents: &one, ConversationID: "conv", RunID: "run", Input: prepTestInput(),
		AgentOptions: &AgentOptions{Model: &model}, MCPHTTPServers: &servers, AgentSessionID: "native",
		AgentStateKey: AgentStateKey(prepTestSessionID), WorkspaceAuthoring: true, ReleaseOnCompletion: true,
		ObserveTools: true, FunctionTools: []FunctionTool{{Name: "f", Parameters: NativeJSON(`{}`), DeferLoading: true}},
		ToolSearch: true,
	}
	stale := foreign
	stale.ExecutionControls = &ExecutionControls{WebSearch: WebSearchLive, TextVerbosity: TextVerbosityLow}
	stale.LocalEnvironment = &LocalEnvironment{ID: prepTestEnvID}
	stale.RequireExistingNativeSession = true
	stale.ObserveMessages = true
	stale.ObserveSubagentIdentities = true
	stale.DisableExecutionEnvironment = false

	table := optInTableFields()
	touched := map[string]bool{}
	multi := optInHostedSession(prepTestEnvID)
	multi.MultiAgentEnabled = true
	multi.StartedTurn = true
	multi.Capabilities = optInCaps(true)
	for _, s := range []SessionConfig{optInBaseSession(), multi} {
		for _, req := range []PromptRequest{foreign, stale} {
			out := optInApply(t, req, s)
			for _, f := range optInChanged(t, req, out) {
				require.Contains(t, table, f, "ApplyOptIns changed %s, which no row of the table sets", f)
				touched[f] = true
			}
			// the result is the same whatever the request held before
			require.Equal(t, optInApply(t, PromptRequest{}, s), optInOnly(out))
		}
	}
	for _, f := range table {
		require.True(t, touched[f], "no Session made ApplyOptIns set %s", f)
	}
}

// blankNonOptIns keeps only the members the table owns.
func optInOnly(p PromptRequest) PromptRequest {
	return PromptRequest{
		ExecutionControls:            p.ExecutionControls,
		LocalEnvironment:             p.LocalEnvironment,
		StrictResume:                 p.StrictResume,
		RequireExistingNativeSession: p.RequireExistingNativeSession,
		ObserveMessages:              p.ObserveMessages,
		ObserveToolObservations:      p.ObserveToolObservations,
		ObserveSubagentIdentities:    p.ObserveSubagentIdentities,
		DisableExecutionEnvironment:  p.DisableExecutionEnvironment,
		DisableSubagents:             p.DisableSubagents,
	}
}

// What ApplyOptIns produces is a valid prompt_request and, with the
// Session's state key, a valid execution_prepare configuration.
func TestOptInsProduceValidRequests(t *testing.T) {
	multi := optInHostedSession(prepTestEnvID)
	multi.MultiAgentEnabled = true
	multi.OutputSchema = NativeJSON(`{"type":"object"}`)
	for _, s := range []SessionConfig{optInBaseSession(), optInHostedSession(prepTestEnvID), multi} {
		cfg := optInApply(t, PromptRequest{AgentKind: "codex", AgentStateKey: AgentStateKey(prepTestSessionID)}, s)
		require.NoError(t, ExecutionPrepare{SessionID: prepTestSessionID, Configuration: cfg}.Validate())
		direct := cfg
		direct.RunID, direct.Input = "run-1", prepTestInput()
		require.NoError(t, direct.Validate())
	}
}

func TestOptInsRejectAnInvalidSession(t *testing.T) {
	cases := []struct {
		name  string
		set   func(*SessionConfig)
		field string
		rule  Rule
	}{
		{"no environment type", func(s *SessionConfig) { s.Environment = "" }, "environment", RuleRequired},
		{"unknown environment type", func(s *SessionConfig) { s.Environment = "cloud" }, "environment", RuleEnum},
		{"hosted without binding", func(s *SessionConfig) { s.Environment = EnvironmentTypeSelfHosted }, "binding", RuleRequired},
		{"none with a binding", func(s *SessionConfig) { s.Binding = &LocalEnvironment{ID: prepTestEnvID} }, "binding", RuleForbidden},
		{"binding with a bad id", func(s *SessionConfig) {
			s.Environment, s.Binding = EnvironmentTypeOpenAIHosted, &LocalEnvironment{ID: "env"}
		}, "binding.id", RuleFormat},
		{"unknown verbosity", func(s *SessionConfig) { s.TextVerbosity = "terse" }, "text_verbosity", RuleEnum},
		{"schema not an object", func(s *SessionConfig) { s.OutputSchema = NativeJSON(`"x"`) }, "output_schema", RuleType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := optInBaseSession()
			tc.set(&s)
			req := PromptRequest{AgentKind: "codex", ObserveMessages: true}
			before := req
			requireFieldError(t, ApplyOptIns(&req, s), tc.field, tc.rule)
			require.Equal(t, before, req, "an invalid Session leaves the request unchanged")
		})
	}
}
