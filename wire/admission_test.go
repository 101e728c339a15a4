package wire

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	prepTestSessionID = "3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b"
	prepTestEnvID     = "8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c"
)

func prepTestInput() MessageInput {
	return MessageInput{{Content: []InputContent{{Type: ContentText, Text: "hello"}}}}
}

func TestPreparationStatusDriveKey(t *testing.T) {
	cases := []struct {
		state, code, op string
		want            string
	}{
		{PreparationPreparing, "", "", "preparing"},
		{PreparationReady, "", "", "ready"},
		{PreparationStarting, "", "", "starting"},
		{PreparationStarted, "", "", "started"},
		{PreparationReleased, "", "", "released"},
		{PreparationExpired, "", "", "expired"},
		{PreparationFailed, PrepCodePreparationFailed, "", "failed"},
		{PreparationFailed, PrepCodeExecutorCleanupUnconfirmed, "", "failed"},
		{PreparationFailed, PrepCodeCleanupUnconfirmed, "", "cleanup_unconfirmed"},
		{PreparationRejected, PrepCodePreparationCapacity, PreparationOpPrepare, "rejected:execution_prepare"},
		{PreparationRejected, PrepCodeStartConflict, PreparationOpStart, "rejected:execution_start"},
		{PreparationRejected, PrepCodeInvalidRelease, PreparationOpRelease, "rejected:execution_release"},
		{PreparationRejected, PrepCodeInvalidRequest, "", ""},
		{PreparationRejected, PrepCodeInvalidRequest, "prompt_request", ""},
		{"", "", "", ""},
		{"pending", "", "", ""},
	}
	for _, tc := range cases {
		p := PreparationStatus{State: tc.state, ErrorCode: tc.code, Operation: tc.op}
		require.Equal(t, tc.want, p.DriveKey(), "%+v", tc)
	}
}

// Every key DriveKey can return for a valid status is one the catalog
// lists under the preparation machine, and every listed key is reachable.
func TestPreparationStatusDriveKeysMatchCatalog(t *testing.T) {
	catalog := []string{"preparing", "ready", "starting", "started", "released", "expired", "failed",
		"cleanup_unconfirmed", "rejected:execution_prepare", "rejected:execution_start", "rejected:execution_release"}
	var examples []PreparationStatus
	readJSONFile(t, "testdata/examples/preparation_status.json", &examples)
	seen := map[string]bool{}
	for _, ex := range examples {
		require.NoError(t, ex.Validate())
		k := ex.DriveKey()
		require.Contains(t, catalog, k)
		seen[k] = true
	}
	// released and the two other rejections are reached in the table above;
	// here only check that the examples cover the states Core sees most.
	for _, k := range []string{"preparing", "ready", "starting", "started", "failed", "cleanup_unconfirmed", "rejected:execution_prepare", "rejected:execution_start"} {
		require.True(t, seen[k], "no example drives %s", k)
	}
}

func TestPreparationStatusLeavesTurnUnclaimed(t *testing.T) {
	rej := PreparationStatus{State: PreparationRejected, Operation: PreparationOpPrepare, ErrorCode: PrepCodePreparationCapacity}
	require.True(t, rej.LeavesTurnUnclaimed())
	for _, p := range []PreparationStatus{
		{State: PreparationRejected, Operation: PreparationOpStart, ErrorCode: PrepCodePreparationCapacity},
		{State: PreparationRejected, Operation: PreparationOpPrepare, ErrorCode: PrepCodeExecutorCapacity},
		{State: PreparationFailed, Handle: "h", Revision: 2, ErrorCode: PrepCodePreparationCapacity},
	} {
		require.False(t, p.LeavesTurnUnclaimed(), "%+v", p)
	}
}

func TestPreparationCodesAreClosedAndCopied(t *testing.T) {
	codes := PreparationCodes()
	require.Len(t, codes, 28)
	seen := map[string]bool{}
	for _, c := range codes {
		require.False(t, seen[c], "duplicate %s", c)
		seen[c] = true
		p := PreparationStatus{Handle: "h", Revision: 1, State: PreparationFailed, ErrorCode: c}
		require.NoError(t, p.Validate(), c)
	}
	codes[0] = "mutated"
	require.Equal(t, PrepCodeInvalidRequest, PreparationCodes()[0])
}

// An unknown state is reported as the state, not as a missing handle or
// revision that only a known state would require.
func TestPreparationStatusUnknownStateIsNamed(t *testing.T) {
	requireFieldError(t, PreparationStatus{State: "bogus"}.Validate(), "state", RuleEnum)
	requireFieldError(t, PreparationStatus{}.Validate(), "state", RuleRequired)
}

func TestPreparationStatusRejectionMayNameHandleAndExecutor(t *testing.T) {
	p := PreparationStatus{ExecutorID: "e", Handle: "h", State: PreparationRejected, RunID: "r",
		ErrorCode: PrepCodeRunConflict, Operation: PreparationOpStart}
	require.NoError(t, p.Validate())
	p.Operation = PreparationOpRelease
	requireFieldError(t, p.Validate(), "run_id", RuleForbidden)
}

func prepValidPrepare() ExecutionPrepare {
	return ExecutionPrepare{SessionID: prepTestSessionID, Configuration: PromptRequest{
		AgentKind:         "codex",
		ExecutionControls: &ExecutionControls{WebSearch: WebSearchDisabled, TextVerbosity: TextVerbosityMedium},
		LocalEnvironment:  &LocalEnvironment{ID: prepTestEnvID},
		AgentStateKey:     AgentStateKey(prepTestSessionID),
		StrictResume:      true,
	}}
}

func prepValidReadOnly() ExecutionPrepare {
	return ExecutionPrepare{SessionID: prepTestSessionID, Configuration: PromptRequest{
		AgentKind:           "codex",
		LocalEnvironment:    &LocalEnvironment{ID: prepTestEnvID},
		AgentStateKey:       AgentStateKey(prepTestSessionID),
		WorkspaceReadOnly:   true,
		ReleaseOnCompletion: true,
		StrictResume:        true,
	}}
}

// The read-only profile admits only the binding, the state key,
// strict_resume and release_on_completion: every other member is named as
// forbidden, one at a time.
func TestReadOnlyProfileForbidsEverythingElse(t *testing.T) {
	one := 1
	empty := []MCPHTTPServer{}
	cases := []struct {
		field string
		set   func(*PromptRequest)
		rule  Rule
	}{
		{"max_concurrent_subagents", func(p *PromptRequest) { p.MaxConcurrentSubagents = &one }, RuleForbidden},
		{"conversation_id", func(p *PromptRequest) { p.ConversationID = "c" }, RuleForbidden},
		{"run_id", func(p *PromptRequest) { p.RunID = "r" }, RuleForbidden},
		{"input", func(p *PromptRequest) { p.Input = prepTestInput() }, RuleForbidden},
		{"agent_options", func(p *PromptRequest) { p.AgentOptions = &AgentOptions{} }, RuleForbidden},
		{"execution_controls", func(p *PromptRequest) { p.ExecutionControls = &ExecutionControls{} }, RuleForbidden},
		{"mcp_http_servers", func(p *PromptRequest) { p.MCPHTTPServers = &empty }, RuleForbidden},
		{"agent_session_id", func(p *PromptRequest) { p.AgentSessionID = "native" }, RuleForbidden},
		{"workspace_authoring", func(p *PromptRequest) { p.WorkspaceAuthoring = true }, RuleForbidden},
		{"require_existing_native_session", func(p *PromptRequest) { p.RequireExistingNativeSession = true }, RuleForbidden},
		{"observe_messages", func(p *PromptRequest) { p.ObserveMessages = true }, RuleForbidden},
		{"observe_tools", func(p *PromptRequest) { p.ObserveTools = true }, RuleForbidden},
		{"observe_tool_observations", func(p *PromptRequest) { p.ObserveToolObservations = true }, RuleForbidden},
		{"observe_subagent_identities", func(p *PromptRequest) { p.ObserveSubagentIdentities = true }, RuleForbidden},
		{"function_tools", func(p *PromptRequest) { p.FunctionTools = []FunctionTool{} }, RuleForbidden},
		{"tool_search", func(p *PromptRequest) { p.ToolSearch = true }, RuleForbidden},
		{"disable_execution_environment", func(p *PromptRequest) { p.DisableExecutionEnvironment = true }, RuleForbidden},
		{"disable_subagents", func(p *PromptRequest) { p.DisableSubagents = true }, RuleForbidden},
		{"local_environment", func(p *PromptRequest) { p.LocalEnvironment = nil }, RuleRequired},
		{"agent_state_key", func(p *PromptRequest) { p.AgentStateKey = "" }, RuleRequired},
		{"release_on_completion", func(p *PromptRequest) { p.ReleaseOnCompletion = false }, RuleRequired},
		{"strict_resume", func(p *PromptRequest) { p.StrictResume = false }, RuleRequired},
		{"agent_kind", func(p *PromptRequest) { p.AgentKind = "" }, RuleRequired},
	}
	require.NoError(t, prepValidReadOnly().Validate())
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			p := prepValidReadOnly()
			tc.set(&p.Configuration)
			requireFieldError(t, p.Validate(), "configuration."+tc.field, tc.rule)
		})
	}
}

func TestPrepareConfigurationRules(t *testing.T) {
	require.NoError(t, prepValidPrepare().Validate())
	cases := []struct {
		name  string
		set   func(*ExecutionPrepare)
		field string
		rule  Rule
	}{
		{"state key of another session", func(p *ExecutionPrepare) {
			p.Configuration.AgentStateKey = AgentStateKey("0b9e7a41-6c2d-4f38-a915-2e7d4c8b6f10")
		}, "configuration.agent_state_key", RuleConflict},
		{"state key without prefix", func(p *ExecutionPrepare) { p.Configuration.AgentStateKey = prepTestSessionID }, "configuration.agent_state_key", RuleConflict},
		{"session ID with NUL", func(p *ExecutionPrepare) {
			p.SessionID = "s\x00"
			p.Configuration.AgentStateKey = AgentStateKey(p.SessionID)
		}, "session_id", RuleFormat},
		{"session ID blank", func(p *ExecutionPrepare) { p.SessionID = " " }, "session_id", RuleRequired},
		{"state key of another Session", func(p *ExecutionPrepare) { p.SessionID = "session" }, "configuration.agent_state_key", RuleConflict},
		{"non-strict resume", func(p *ExecutionPrepare) { p.Configuration.StrictResume = false }, "configuration.strict_resume", RuleRequired},
		{"workspace authoring", func(p *ExecutionPrepare) { p.Configuration.WorkspaceAuthoring = true }, "configuration.workspace_authoring", RuleForbidden},
		{"empty input present", func(p *ExecutionPrepare) { p.Configuration.Input = MessageInput{} }, "configuration.input", RuleForbidden},
		{"environment with disable_execution_environment", func(p *ExecutionPrepare) {
			p.Configuration.DisableExecutionEnvironment = true
		}, "configuration.disable_execution_environment", RuleConflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := prepValidPrepare()
			tc.set(&p)
			requireFieldError(t, p.Validate(), tc.field, tc.rule)
		})
	}
}

// Each MCP HTTP server needs an explicit origin; the origin decides which
// environment the request must have. Nothing ever defaults.
func TestMCPConnectionOrigin(t *testing.T) {
	server := func(origin string) MCPHTTPServer {
		return MCPHTTPServer{ConnectionOrigin: origin, ServerLabel: "docs", ServerURL: "https://mcp.example/x"}
	}
	withServers := func(p PromptRequest, s ...MCPHTTPServer) PromptRequest {
		p.MCPHTTPServers = &s
		return p
	}
	local := PromptRequest{AgentKind: "k", RunID: "r", Input: prepTestInput(), LocalEnvironment: &LocalEnvironment{ID: prepTestEnvID}}
	none := PromptRequest{AgentKind: "k", RunID: "r", Input: prepTestInput(), DisableExecutionEnvironment: true}
	bare := PromptRequest{AgentKind: "k", RunID: "r", Input: prepTestInput()}

	require.NoError(t, withServers(local, server(MCPOriginEnvironment)).Validate())
	require.NoError(t, withServers(none, server(MCPOriginService)).Validate())
	require.NoError(t, withServers(none).Validate(), "an explicit empty list is valid")

	const f = "mcp_http_servers[0].connection_origin"
	requireFieldError(t, withServers(local, server("")).Validate(), f, RuleRequired)
	requireFieldError(t, withServers(local, server("Service")).Validate(), f, RuleEnum)
	requireFieldError(t, withServers(local, server(MCPOriginService)).Validate(), f, RuleConflict)
	requireFieldError(t, withServers(bare, server(MCPOriginService)).Validate(), f, RuleConflict)
	requireFieldError(t, withServers(none, server(MCPOriginEnvironment)).Validate(), f, RuleConflict)
	requireFieldError(t, withServers(bare, server(MCPOriginEnvironment)).Validate(), f, RuleConflict)
}

// nil and [] are different requests and both survive a round trip.
func TestMCPServersNilAndEmptyAreDistinct(t *testing.T) {
	p := PromptRequest{AgentKind: "k", RunID: "r", Input: prepTestInput()}
	b, err := json.Marshal(p)
	require.NoError(t, err)
	require.NotContains(t, string(b), "mcp_http_servers")

	empty := []MCPHTTPServer{}
	p.MCPHTTPServers = &empty
	b, err = json.Marshal(p)
	require.NoError(t, err)
	require.Contains(t, string(b), `"mcp_http_servers":[]`)
	back, err := decodePayload[PromptRequest]("prompt_request", b)
	require.NoError(t, err)
	require.NotNil(t, back.MCPHTTPServers)
	require.Empty(t, *back.MCPHTTPServers)
}

func TestToolSearchNeedsDeferredFunctionsAndViceVersa(t *testing.T) {
	fn := func(name string, deferred bool) FunctionTool {
		return FunctionTool{Name: name, Parameters: NativeJSON(`{"type":"object"}`), DeferLoading: deferred}
	}
	p := PromptRequest{AgentKind: "k", RunID: "r", Input: prepTestInput()}
	p.FunctionTools = []FunctionTool{fn("a", false), fn("b", true)}
	p.ToolSearch = true
	require.NoError(t, p.Validate())
	p.ToolSearch = false
	requireFieldError(t, p.Validate(), "function_tools[1].defer_loading", RuleConflict)
	p.FunctionTools = []FunctionTool{fn("a", false)}
	p.ToolSearch = true
	requireFieldError(t, p.Validate(), "tool_search", RuleConflict)
	p.FunctionTools = nil
	requireFieldError(t, p.Validate(), "tool_search", RuleConflict)
}

func TestHarnessConfigBoundIsOnTheCompactEncoding(t *testing.T) {
	body := `{"k":"` + strings.Repeat("x", MaxHarnessConfigBytes-8) + `"}`
	require.Len(t, body, MaxHarnessConfigBytes)
	spaced := NativeJSON("{ \n " + body[1:len(body)-1] + " \n }")
	o := AgentOptions{HarnessConfig: spaced}
	require.Nil(t, o.validate(), "whitespace does not count")
	o.HarnessConfig = NativeJSON(`{"k":"` + strings.Repeat("x", MaxHarnessConfigBytes-7) + `"}`)
	fe := o.validate()
	require.NotNil(t, fe)
	require.Equal(t, "harness_config", fe.Field)
	require.Equal(t, RuleTooLarge, fe.Rule)
}

// Validators run on values built in Go as well as on decoded frames, so a
// malformed raw object must be rejected rather than passed on. Bytes that
// are not JSON at all break the syntax rule, as for every opaque member
// (see TestOpaqueMembersShareOneRule).
func TestRawObjectsBuiltInGo(t *testing.T) {
	f := FunctionTool{Name: "f", Parameters: NativeJSON(`{"unterminated"`)}
	require.Equal(t, RuleSyntax, f.validate().Rule)
	f.Parameters = NativeJSON(` null `)
	require.Equal(t, RuleRequired, f.validate().Rule)
	f.Parameters = NativeJSON(`[]`)
	require.Equal(t, RuleType, f.validate().Rule)
}

func TestSecretsAreNeverEchoed(t *testing.T) {
	secret := "s3cr3t-" + strings.Repeat("z", 40)
	p := PromptRequest{AgentKind: "k", RunID: "r", Input: prepTestInput(), DisableExecutionEnvironment: true}
	servers := []MCPHTTPServer{{ConnectionOrigin: MCPOriginService, ServerLabel: "l",
		ServerURL: "https://user:" + secret + "@mcp.example/"}}
	p.MCPHTTPServers = &servers
	err := p.Validate()
	requireFieldError(t, err, "mcp_http_servers[0].server_url", RuleFormat)
	require.NotContains(t, err.Error(), "s3cr3t")
}

// Marshal refuses to send what the peer would reject: the same validator
// runs in both directions.
func TestMarshalSideIsAsStrict(t *testing.T) {
	p := prepValidPrepare()
	p.Configuration.RunID = "run-1"
	requireFieldError(t, p.Validate(), "configuration.run_id", RuleForbidden)

	s := ExecutionStart{ExecutorID: "e", Handle: "h", RunID: "r"}
	requireFieldError(t, s.Validate(), "input", RuleRequired)
	s.Input = MessageInput{{Content: []InputContent{{Type: ContentImage}}}}
	requireFieldError(t, s.Validate(), "input[0].content[0].image_url", RuleRequired)
}

func TestBodylessFramesStillMeetTheirRules(t *testing.T) {
	_, err := decodePayload[DeviceShutdown]("device_shutdown", nil)
	require.NoError(t, err)
	_, err = decodePayload[PromptCancel]("prompt_cancel", nil)
	requireFieldError(t, err, "payload.delivery_id", RuleRequired)
	_, err = decodePayload[DeviceShutdown]("device_shutdown", []byte(`{} {}`))
	requireFieldError(t, err, "payload", RuleSyntax)
	_, err = decodePayload[DeviceShutdown]("device_shutdown", []byte("{\"reason\":\"\xff\"}"))
	requireFieldError(t, err, "payload.reason", RuleFormat, "invalid UTF-8 is refused, never replaced")
	_, err = decodePayload[DeviceShutdown]("device_shutdown", []byte(`{"reason":"\ud800"}`))
	requireFieldError(t, err, "payload.reason", RuleFormat, "an unpaired surrogate is refused, never replaced")
	requireFieldError(t, DeviceShutdown{Reason: "\xff"}.Validate(), "reason", RuleFormat)
}
