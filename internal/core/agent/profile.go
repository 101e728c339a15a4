package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/agentwire/agentwire/wire"
)

// Profile is a Harness kind's engine profile in Core: which public
// features of an Agent Core admits on that kind, and which controls Core
// sets on every Run of it. A Runtime's declaration says what a device can
// do; the profile says what Core is willing to offer on the engine
// behind the kind (daemon-protocol.txt:31, 39).
type Profile struct {
	AgentKind string   `json:"agent_kind"`
	Controls  Controls `json:"controls"`
	Features  Features `json:"features"`
}

// Controls are the controls a profile declares. A declared control is
// set on every Run, so every Run of the kind requires its capability
// (web_search_control, text_verbosity; daemon-protocol.txt:39).
type Controls struct {
	WebSearch     bool `json:"web_search"`
	TextVerbosity bool `json:"text_verbosity"`
}

// Features are the Agent features a profile qualifies.
type Features struct {
	FunctionTools                  bool `json:"function_tools"`
	JSONSchemaOutput               bool `json:"json_schema_output"`
	MultiAgent                     bool `json:"multi_agent"`
	ToolSearch                     bool `json:"tool_search"`
	ProgrammaticToolCallingDisable bool `json:"programmatic_tool_calling_disable"`
	MCPHTTP                        bool `json:"mcp_http"`
}

// Wire is the part of the profile admission reads.
func (p Profile) Wire() wire.EngineProfile {
	return wire.EngineProfile{WebSearchControl: p.Controls.WebSearch, TextVerbosity: p.Controls.TextVerbosity}
}

// Qualify checks that the profile qualifies every feature d uses; the
// error names the Agent field that asks for more than the profile offers.
func (p Profile) Qualify(d Definition) error {
	no := func(field, what string) error {
		return &FieldError{Field: field, Detail: fmt.Sprintf("the engine profile of agent kind %s does not qualify %s", d.AgentKind, what)}
	}
	switch {
	case len(d.FunctionTools) > 0 && !p.Features.FunctionTools:
		return no("function_tools", "function tools")
	case d.schema() != nil && !p.Features.JSONSchemaOutput:
		return no("output_format", "json_schema output")
	case d.MultiAgent != nil && d.MultiAgent.Enabled && !p.Features.MultiAgent:
		return no("multi_agent.enabled", "subagents")
	case d.ToolSearch && !p.Features.ToolSearch:
		return no("tool_search", "tool search")
	case d.DisableProgrammaticToolCalling && !p.Features.ProgrammaticToolCallingDisable:
		return no("disable_programmatic_tool_calling", "switching programmatic tool calling off")
	case len(d.MCPServers) > 0 && !p.Features.MCPHTTP:
		return no("mcp_servers", "HTTP MCP servers")
	case d.TextVerbosity != "" && !p.Controls.TextVerbosity:
		return no("text_verbosity", "a text verbosity (it declares no text verbosity control)")
	}
	return nil
}

// Profiles are the engine profiles Core knows, by agent kind. A kind
// without one qualifies no optional feature and declares no control: a
// Session of that kind runs bare, and an Agent using a feature on it is
// refused until an operator configures a profile.
type Profiles map[string]Profile

// Lookup returns kind's profile, the empty one when none is configured.
func (ps Profiles) Lookup(kind string) Profile {
	if p, ok := ps[kind]; ok {
		return p
	}
	return Profile{AgentKind: kind}
}

// Sorted lists the profiles by agent kind.
func (ps Profiles) Sorted() []Profile {
	out := make([]Profile, 0, len(ps))
	for _, p := range ps {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AgentKind < out[j].AgentKind })
	return out
}

// DefaultProfiles are the profiles Core ships, one per Harness this
// project ships or targets.
//
// decision: each default qualifies what its engine offers natively and
// its adapter maps (docs/harnesses.md): codex declares both controls
// (thread settings web_search and model_verbosity) and qualifies function
// tools (dynamic tools), json_schema output (outputSchema), subagents and
// HTTP MCP servers (its mcp_servers settings); claude declares no control
// (Claude Code has neither setting) and qualifies function tools (an MCP
// server on the control channel), json_schema output (--json-schema),
// subagents (its Task tool) and HTTP MCP servers (--mcp-config). Whether a
// device can run them is still its declaration's to say (no adapter
// declares mcp_http_tools yet, so such Turns wait capability_missing); exec
// runs a plain process, so it qualifies nothing; gemini (an ACP kind)
// qualifies function tools, which its adapter serves to Gemini CLI from an
// MCP server it hosts (runtime/adapters/acp), and nothing else, since ACP
// offers the client no output format or controls; codex-acp qualifies
// nothing beyond the prompt; script, the test adapter, qualifies
// every feature so that the device's declaration alone decides.
func DefaultProfiles() Profiles {
	all := Features{FunctionTools: true, JSONSchemaOutput: true, MultiAgent: true, ToolSearch: true, ProgrammaticToolCallingDisable: true, MCPHTTP: true}
	ps := Profiles{}
	for _, p := range []Profile{
		{AgentKind: "codex", Controls: Controls{WebSearch: true, TextVerbosity: true}, Features: Features{FunctionTools: true, JSONSchemaOutput: true, MultiAgent: true, MCPHTTP: true}},
		{AgentKind: "claude", Features: Features{FunctionTools: true, JSONSchemaOutput: true, MultiAgent: true, MCPHTTP: true}},
		{AgentKind: "exec"},
		{AgentKind: "gemini", Features: Features{FunctionTools: true}},
		{AgentKind: "codex-acp"},
		{AgentKind: "script", Features: all},
	} {
		ps[p.AgentKind] = p
	}
	return ps
}

// LoadProfiles reads a profiles file ({"profiles":[...]}) over the
// defaults: each profile it lists replaces the default of its kind
// whole. Unknown fields, a profile without agent_kind and a kind listed
// twice are refused with the file and the profile's index.
func LoadProfiles(path string) (Profiles, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("engine profiles: %w", err)
	}
	return ParseProfiles(path, b)
}

// ParseProfiles is LoadProfiles on the file's content; name is used in
// errors.
func ParseProfiles(name string, b []byte) (Profiles, error) {
	var doc struct {
		Profiles []Profile `json:"profiles"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("engine profiles %s: %w", name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("engine profiles %s: data after the document", name)
	}
	ps := DefaultProfiles()
	seen := map[string]bool{}
	for i, p := range doc.Profiles {
		switch {
		case strings.TrimSpace(p.AgentKind) == "":
			return nil, fmt.Errorf("engine profiles %s: profiles[%d].agent_kind: required", name, i)
		case seen[p.AgentKind]:
			return nil, fmt.Errorf("engine profiles %s: profiles[%d].agent_kind: %q is listed twice", name, i, p.AgentKind)
		}
		seen[p.AgentKind] = true
		ps[p.AgentKind] = p
	}
	return ps, nil
}
