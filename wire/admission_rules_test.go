package wire_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// admissionAlways is the table's first row, written out so the test does not read
// the implementation's table.
var admissionAlways = []string{"streaming", "steering", "durable_turns", "durable_input_receipts", "preparation", "execution_controls", "tool_observations"}

// admissionSet builds a set, failing the test on a name that is not a capability:
// every name this file uses is checked against the generated list here.
func admissionSet(t *testing.T, names ...string) wire.CapabilitySet {
	t.Helper()
	s, err := wire.NewCapabilitySet(names...)
	require.NoError(t, err)
	return s
}

func admissionRequired(t *testing.T, in wire.AdmissionInput) wire.CapabilitySet {
	t.Helper()
	s, err := wire.RequiredCapabilities(in)
	require.NoError(t, err)
	return s
}

// admissionDelta lists what to requires beyond from, and what from required that
// to no longer does, both in spec order. Only the Environment and
// multi-agent rows ever remove anything: they swap one requirement for
// another.
func admissionDelta(t *testing.T, from, to wire.AdmissionInput) (adds, removes []string) {
	t.Helper()
	f, w := admissionRequired(t, from), admissionRequired(t, to)
	for _, n := range w.Names() {
		if !f.Has(n) {
			adds = append(adds, n)
		}
	}
	for _, n := range f.Names() {
		if !w.Has(n) {
			removes = append(removes, n)
		}
	}
	return adds, removes
}

// admissionAdded is admissionDelta for a row that only adds.
func admissionAdded(t *testing.T, from, to wire.AdmissionInput) []string {
	t.Helper()
	adds, removes := admissionDelta(t, from, to)
	require.Empty(t, removes, "this row only adds requirements")
	return adds
}

func admissionImageInput() wire.MessageInput {
	return wire.MessageInput{{Content: []wire.InputContent{
		{Type: wire.ContentText, Text: "look"},
		{Type: wire.ContentImage, ImageURL: "https://example.com/a.png"},
	}}}
}

func admissionTextInput() wire.MessageInput {
	return wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: "hi"}}}}
}

// admissionBase is the smallest input: no Environment, multi-agent off, text input.
func admissionBase() wire.AdmissionInput {
	return wire.AdmissionInput{Environment: wire.EnvironmentTypeNone, Input: admissionTextInput()}
}

func TestAdmissionRowsAlwaysEnvironmentAndMultiAgent(t *testing.T) {
	// Every input matches the always row, one Environment row and one
	// multi-agent row; these rows are checked on the whole set.
	cases := []struct {
		env   wire.EnvironmentType
		multi bool
		want  []string
	}{
		{wire.EnvironmentTypeNone, false, []string{"environment_none", "subagent_control"}},
		{wire.EnvironmentTypeNone, true, []string{"environment_none", "subagent_observations"}},
		{wire.EnvironmentTypeOpenAIHosted, false, []string{"local_environment", "workspace_read_preparation", "workspace_output_export", "subagent_control"}},
		{wire.EnvironmentTypeSelfHosted, true, []string{"local_environment", "workspace_read_preparation", "workspace_output_export", "subagent_observations"}},
	}
	for _, c := range cases {
		t.Run(string(c.env), func(t *testing.T) {
			in := wire.AdmissionInput{Environment: c.env, Agent: wire.AgentFeatures{MultiAgentEnabled: c.multi}}
			want := admissionSet(t, append(slices.Clone(admissionAlways), c.want...)...)
			require.Equal(t, want.Names(), admissionRequired(t, in).Names())
		})
	}
}

// TestAdmissionRowByRow changes one condition at a time and checks exactly
// which capabilities that row adds (and, for the rows that swap one
// requirement for another, which it drops).
func TestAdmissionRowByRow(t *testing.T) {
	hosted := admissionBase()
	hosted.Environment = wire.EnvironmentTypeOpenAIHosted
	multi := admissionBase()
	multi.Agent.MultiAgentEnabled = true
	twoServers := admissionBase()
	twoServers.Agent.MCPHTTPServers = []wire.AgentMCPServer{{}, {}}
	local := []string{"local_environment", "workspace_read_preparation", "workspace_output_export"}
	rows := []struct {
		name    string
		from    wire.AdmissionInput
		set     func(*wire.AdmissionInput)
		adds    []string
		removes []string
	}{
		{"environment openai_hosted", admissionBase(),
			func(in *wire.AdmissionInput) { in.Environment = wire.EnvironmentTypeOpenAIHosted },
			local, []string{"environment_none"}},
		{"environment self_hosted", admissionBase(),
			func(in *wire.AdmissionInput) { in.Environment = wire.EnvironmentTypeSelfHosted },
			local, []string{"environment_none"}},
		{"environment none", hosted,
			func(in *wire.AdmissionInput) { in.Environment = wire.EnvironmentTypeNone },
			[]string{"environment_none"}, local},
		{"idle Files read", admissionBase(),
			func(in *wire.AdmissionInput) { in.IdleFilesRead = true },
			[]string{"workspace_read_preparation"}, nil},
		{"native Session ID missing", admissionBase(),
			func(in *wire.AdmissionInput) { in.NativeSessionMissing = true },
			[]string{"native_session_recovery"}, nil},
		{"profile declares web search control", admissionBase(),
			func(in *wire.AdmissionInput) { in.Profile.WebSearchControl = true },
			[]string{"web_search_control"}, nil},
		{"profile declares text verbosity", admissionBase(),
			func(in *wire.AdmissionInput) { in.Profile.TextVerbosity = true },
			[]string{"text_verbosity"}, nil},
		{"json_schema output", admissionBase(),
			func(in *wire.AdmissionInput) { in.Agent.JSONSchemaOutput = true },
			[]string{"message_items", "structured_output"}, nil},
		{"multi_agent enabled true", admissionBase(),
			func(in *wire.AdmissionInput) { in.Agent.MultiAgentEnabled = true },
			[]string{"subagent_observations"}, []string{"subagent_control"}},
		{"multi_agent enabled false", multi,
			func(in *wire.AdmissionInput) { in.Agent.MultiAgentEnabled = false },
			[]string{"subagent_control"}, []string{"subagent_observations"}},
		{"tool search enabled", admissionBase(),
			func(in *wire.AdmissionInput) { in.Agent.ToolSearch = true },
			[]string{"tool_search"}, nil},
		{"function loading deferred", admissionWith(admissionBase(), func(in *wire.AdmissionInput) { in.Agent.Functions = []wire.AgentFunction{{}} }),
			func(in *wire.AdmissionInput) { in.Agent.Functions[0].DeferLoading = true },
			[]string{"tool_search"}, nil},
		{"programmatic tool calling disabled explicitly", admissionBase(),
			func(in *wire.AdmissionInput) { in.Agent.DisableProgrammaticToolCalling = true },
			[]string{"programmatic_tool_calling_disable"}, nil},
		{"function tools declared", admissionBase(),
			func(in *wire.AdmissionInput) { in.Agent.Functions = []wire.AgentFunction{{}} },
			[]string{"function_tools"}, nil},
		{"image in a message", admissionBase(),
			func(in *wire.AdmissionInput) { in.Input = admissionImageInput() },
			[]string{"message_images"}, nil},
		{"image in a function result", admissionBase(),
			func(in *wire.AdmissionInput) { in.FunctionResultImages = true },
			[]string{"function_result_images"}, nil},
		{"HTTP MCP servers declared", admissionBase(),
			func(in *wire.AdmissionInput) { in.Agent.MCPHTTPServers = []wire.AgentMCPServer{{}} },
			[]string{"mcp_http_tools"}, nil},
		{"one HTTP MCP server required", twoServers,
			func(in *wire.AdmissionInput) { in.Agent.MCPHTTPServers[1].Required = true },
			[]string{"mcp_http_required"}, nil},
		{"Vault credential selected for one HTTP MCP server", twoServers,
			func(in *wire.AdmissionInput) { in.Agent.MCPHTTPServers[0].VaultCredential = true },
			[]string{"mcp_http_bearer_auth"}, nil},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			adds, removes := admissionDelta(t, r.from, admissionWith(r.from, r.set))
			require.Equal(t, r.adds, adds, "adds, in spec order")
			require.Equal(t, r.removes, removes, "removes, in spec order")
			admissionSet(t, r.adds...)
		})
	}
}

// admissionWith returns a copy of from changed by f; slices are cloned so that f
// never writes through to another row's input.
func admissionWith(from wire.AdmissionInput, f func(*wire.AdmissionInput)) wire.AdmissionInput {
	from.Agent.Functions = slices.Clone(from.Agent.Functions)
	from.Agent.MCPHTTPServers = slices.Clone(from.Agent.MCPHTTPServers)
	f(&from)
	return from
}

func TestAdmissionCombinedCases(t *testing.T) {
	t.Run("a deferred function needs tool search and function tools", func(t *testing.T) {
		in := admissionBase()
		in.Agent.Functions = []wire.AgentFunction{{}, {DeferLoading: true}}
		require.Equal(t, []string{"tool_search", "function_tools"}, admissionAdded(t, admissionBase(), in))
	})
	t.Run("an idle Files read of a local Environment adds nothing more", func(t *testing.T) {
		in := admissionBase()
		in.Environment = wire.EnvironmentTypeSelfHosted
		read := in
		read.IdleFilesRead = true
		require.Empty(t, admissionAdded(t, in, read))
	})
	t.Run("a text-only input needs no image capability", func(t *testing.T) {
		in := admissionBase()
		in.Input = nil
		require.Empty(t, admissionAdded(t, in, admissionBase()))
	})
	t.Run("required and Vault credential on the same server", func(t *testing.T) {
		in := admissionBase()
		in.Agent.MCPHTTPServers = []wire.AgentMCPServer{{Required: true, VaultCredential: true}}
		require.Equal(t, []string{"mcp_http_tools", "mcp_http_required", "mcp_http_bearer_auth"}, admissionAdded(t, admissionBase(), in))
	})
	t.Run("everything at once", func(t *testing.T) {
		got := admissionRequired(t, admissionEverything()).Names()
		var want []string
		for _, f := range wire.CapabilityFields() {
			if !slices.Contains(admissionNeverRequired, f.Name) && f.Name != "subagent_control" && f.Name != "environment_none" {
				want = append(want, f.Name)
			}
		}
		require.Equal(t, want, got)
	})
}

// admissionNeverRequired are the capabilities Core has no admission rule for.
var admissionNeverRequired = []string{"permissions", "usage", "resume", "workspace_authoring"}

// admissionEverything uses every feature that adds a requirement, with a local
// Environment and multi-agent on.
func admissionEverything() wire.AdmissionInput {
	return wire.AdmissionInput{
		Environment: wire.EnvironmentTypeSelfHosted,
		Profile:     wire.EngineProfile{WebSearchControl: true, TextVerbosity: true},
		Agent: wire.AgentFeatures{
			JSONSchemaOutput:               true,
			MultiAgentEnabled:              true,
			ToolSearch:                     true,
			DisableProgrammaticToolCalling: true,
			Functions:                      []wire.AgentFunction{{DeferLoading: true}},
			MCPHTTPServers:                 []wire.AgentMCPServer{{Required: true}, {VaultCredential: true}},
		},
		Input:                admissionImageInput(),
		FunctionResultImages: true,
		NativeSessionMissing: true,
		IdleFilesRead:        true,
	}
}

// TestAdmissionReachesEveryRuledCapability: each capability is required by
// some input, except the four the protocol leaves to the Runtime or to no
// one; those are never required.
func TestAdmissionReachesEveryRuledCapability(t *testing.T) {
	none := admissionEverything()
	none.Environment = wire.EnvironmentTypeNone
	none.Agent.MultiAgentEnabled = false
	union := admissionRequired(t, admissionEverything()).Union(admissionRequired(t, none))
	for _, f := range wire.CapabilityFields() {
		require.Equal(t, !slices.Contains(admissionNeverRequired, f.Name), union.Has(f.Name), f.Name)
	}
	admissionSet(t, admissionNeverRequired...)
}

func TestAdmissionRejectsBadEnvironment(t *testing.T) {
	for env, rule := range map[wire.EnvironmentType]wire.Rule{
		"":               wire.RuleRequired,
		"None":           wire.RuleEnum,
		"hosted":         wire.RuleEnum,
		" self_hosted":   wire.RuleEnum,
		"openai_hosted ": wire.RuleEnum,
	} {
		in := admissionEverything()
		in.Environment = env
		s, err := wire.RequiredCapabilities(in)
		var fe *wire.FieldError
		require.ErrorAs(t, err, &fe, "%q", env)
		require.Equal(t, "environment", fe.Field)
		require.Equal(t, rule, fe.Rule)
		require.Zero(t, s.Len(), "no partial set on error")
		require.False(t, env.Local())

		_, err = wire.ParseEnvironmentType(string(env))
		require.ErrorAs(t, err, &fe)
		require.Equal(t, rule, fe.Rule)
		require.ErrorIs(t, env.Validate(), wire.ErrInvalid)
	}
	for _, s := range []string{"none", "openai_hosted", "self_hosted"} {
		env, err := wire.ParseEnvironmentType(s)
		require.NoError(t, err)
		require.Equal(t, s, string(env))
		require.NoError(t, env.Validate())
		require.Equal(t, s != "none", env.Local())
	}
}

func TestMissingNamesEachField(t *testing.T) {
	req := admissionRequired(t, admissionEverything()).Union(admissionRequired(t, admissionBase()))
	require.Empty(t, req.Missing(wiretest.Capabilities(), true))
	require.NoError(t, req.Check(wiretest.Capabilities(), true))
	for _, f := range wire.CapabilityFields() {
		t.Run(f.Name, func(t *testing.T) {
			decl := wiretest.Capabilities(wiretest.Unsupports(f.Name))
			if slices.Contains(admissionNeverRequired, f.Name) {
				require.Empty(t, req.Missing(decl, true))
				require.NoError(t, req.Check(decl, true))
				return
			}
			require.Equal(t, []string{f.Name}, req.Missing(decl, true))
			err := req.Check(decl, true)
			require.ErrorIs(t, err, wire.ErrNotAdmitted)
			var ae *wire.AdmissionError
			require.ErrorAs(t, err, &ae)
			require.Equal(t, &wire.AdmissionError{Unsupported: []string{f.Name}}, ae)
			require.Contains(t, err.Error(), f.Name)

			// An unspecified field is not supported, and Check rejects the
			// incomplete declaration itself, naming the field.
			undecided := wiretest.Capabilities(wiretest.Unspecified(f.Name))
			require.Equal(t, []string{f.Name}, req.Missing(undecided, true))
			var fe *wire.FieldError
			require.ErrorAs(t, req.Check(undecided, true), &fe)
			require.Equal(t, f.Name, fe.Field)
		})
	}
}

func TestMissingIsInSpecOrder(t *testing.T) {
	req := admissionRequired(t, admissionEverything())
	decl := wiretest.Capabilities(wiretest.Unsupports("mcp_http_bearer_auth", "message_images", "streaming", "usage"))
	require.Equal(t, []string{"streaming", "message_images", "mcp_http_bearer_auth"}, req.Missing(decl, true))
}

func TestUnavailableHarness(t *testing.T) {
	req := admissionRequired(t, admissionBase())
	full := wiretest.Capabilities()
	require.Equal(t, []string{wire.RequirementAvailable}, req.Missing(full, false))
	err := req.Check(full, false)
	require.ErrorIs(t, err, wire.ErrNotAdmitted)
	var ae *wire.AdmissionError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, &wire.AdmissionError{Unavailable: true}, ae)
	require.Contains(t, err.Error(), "not available")

	// Even an empty requirement needs an available Harness.
	require.Equal(t, []string{"available"}, wire.CapabilitySet{}.Missing(full, false))

	// Unavailable and lacking: both are reported, availability first.
	decl := wiretest.Capabilities(wiretest.Unsupports("steering"))
	require.Equal(t, []string{"available", "steering"}, req.Missing(decl, false))
	require.ErrorAs(t, req.Check(decl, false), &ae)
	require.Equal(t, &wire.AdmissionError{Unavailable: true, Unsupported: []string{"steering"}}, ae)

	// An unavailable Harness must still declare every field.
	var fe *wire.FieldError
	require.ErrorAs(t, req.Check(wiretest.Capabilities(wiretest.Unspecified("usage")), false), &fe)
	require.Equal(t, "usage", fe.Field)
}

func TestCapabilitySet(t *testing.T) {
	var empty wire.CapabilitySet
	require.Zero(t, empty.Len())
	require.Nil(t, empty.Names())
	require.Equal(t, "{}", empty.String())
	require.False(t, empty.Has("streaming"))

	s := admissionSet(t, "usage", "streaming", "usage")
	require.Equal(t, 2, s.Len())
	require.Equal(t, []string{"streaming", "usage"}, s.Names())
	require.Equal(t, "{streaming, usage}", s.String())
	require.False(t, s.Has("teleport"))
	require.Equal(t, []string{"streaming", "usage", "resume"}, s.Union(admissionSet(t, "resume")).Names())
	require.Equal(t, s, s.Union(empty))

	_, err := wire.NewCapabilitySet("streaming", "tool_items")
	var fe *wire.FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "[1]", fe.Field)
	require.Equal(t, wire.RuleEnum, fe.Rule)
	require.True(t, errors.Is(err, wire.ErrInvalid))
}
