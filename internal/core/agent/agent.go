// Package agent is what a Session runs: an Agent, a project's named and
// versioned definition of an agent kind with its model, instructions,
// function tools, output format and controls. A Session freezes the
// version it was created with, so the configuration execution_prepare
// sends stays what it was for every Turn of the Session
// (daemon-protocol.txt:114). Definition maps an Agent onto what admission
// reads (wire.AgentFeatures) and what the Harness receives.
package agent

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentwire/agentwire/internal/core/vault"
	"github.com/agentwire/agentwire/wire"
)

// Definition is an Agent as the public API takes it.
type Definition struct {
	// Name is for people; unique per project is not required.
	Name string `json:"name,omitempty"`
	// AgentKind is the Harness kind the Agent runs on (codex, claude, ...).
	AgentKind string `json:"agent_kind"`
	// Model is passed to the Harness; "" leaves its default.
	Model string `json:"model,omitempty"`
	// Instructions become the Harness's system prompt.
	Instructions string `json:"instructions,omitempty"`
	// FunctionTools are answered by the Session's client
	// (POST /api/v1/turns/{id}/function-results).
	FunctionTools []wire.FunctionTool `json:"function_tools,omitempty"`
	// OutputFormat is text (the default) or json_schema with its schema.
	OutputFormat *OutputFormat `json:"output_format,omitempty"`
	// TextVerbosity is low, medium (the default) or high.
	TextVerbosity string `json:"text_verbosity,omitempty"`
	// MultiAgent enables the Harness's subagents.
	MultiAgent *MultiAgent `json:"multi_agent,omitempty"`
	// ToolSearch loads function tools marked defer_loading on demand.
	ToolSearch bool `json:"tool_search,omitempty"`
	// DisableProgrammaticToolCalling switches programmatic tool calling
	// off explicitly; unset leaves the Harness's default.
	DisableProgrammaticToolCalling bool `json:"disable_programmatic_tool_calling,omitempty"`
	// MCPServers are HTTP MCP servers the Harness connects to.
	MCPServers []MCPServer `json:"mcp_servers,omitempty"`
}

// MCPServer is one HTTP MCP server of an Agent.
type MCPServer struct {
	ServerLabel string `json:"server_label"`
	// ServerURL is an absolute http or https URL without user information.
	ServerURL string `json:"server_url"`
	// ConnectionOrigin is where the connection is made from: service (no
	// execution environment) or environment (the Session's bound
	// workspace). "" lets Core choose per Session before dispatch: the
	// environment for a Session with a workspace, the service otherwise.
	ConnectionOrigin string `json:"connection_origin,omitempty"`
	// AllowedTools: absent allows every tool the server offers; a list
	// allows exactly those.
	AllowedTools *[]string `json:"allowed_tools,omitempty"`
	// Required fails the Run when the server is unavailable.
	Required bool `json:"required,omitempty"`
	// BearerSecret names a secret of the project's Vault
	// (/api/v1/vault/secrets) that Core sends as the server's bearer
	// token; the Agent never holds the token itself.
	BearerSecret string `json:"bearer_secret,omitempty"`
}

// OutputFormat is an Agent's output format.
type OutputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema,omitempty"`
}

// MultiAgent is an Agent's multi_agent setting.
type MultiAgent struct {
	Enabled bool `json:"enabled"`
}

// FieldError names the field of a definition that is wrong.
type FieldError struct{ Field, Detail string }

func (e *FieldError) Error() string { return "agent: " + e.Field + ": " + e.Detail }

// Validate checks the whole definition; the first problem is returned
// with the field it is in.
func (d Definition) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &FieldError{Field: field, Detail: fmt.Sprintf(format, args...)}
	}
	if strings.TrimSpace(d.AgentKind) == "" {
		return bad("agent_kind", "the Harness kind the Agent runs on is required")
	}
	if err := CheckKind(d.AgentKind); err != nil {
		return bad("agent_kind", "%v", err)
	}
	if len(d.Name) > 200 {
		return bad("name", "at most 200 bytes")
	}
	seen := map[string]bool{}
	for i, f := range d.FunctionTools {
		field := fmt.Sprintf("function_tools[%d]", i)
		switch {
		case f.Name == "":
			return bad(field+".name", "a function tool needs a name")
		case seen[f.Name]:
			return bad(field+".name", "function %q is declared twice", f.Name)
		case f.DeferLoading && !d.ToolSearch:
			return bad(field+".defer_loading", "deferred loading needs tool_search")
		}
		seen[f.Name] = true
		var schema map[string]any
		if len(f.Parameters) == 0 || json.Unmarshal(f.Parameters, &schema) != nil {
			return bad(field+".parameters", "the arguments' JSON Schema must be an object")
		}
	}
	if d.ToolSearch {
		deferred := false
		for _, f := range d.FunctionTools {
			deferred = deferred || f.DeferLoading
		}
		if !deferred {
			return bad("tool_search", "tool search loads deferred function tools: mark at least one function_tools[i].defer_loading")
		}
	}
	if o := d.OutputFormat; o != nil {
		switch o.Type {
		case "text":
			if len(o.Schema) > 0 {
				return bad("output_format.schema", "a text output format takes no schema")
			}
		case "json_schema":
			var schema map[string]any
			if len(o.Schema) == 0 || json.Unmarshal(o.Schema, &schema) != nil {
				return bad("output_format.schema", "a json_schema output format needs a JSON Schema object")
			}
		default:
			return bad("output_format.type", "want text or json_schema, got %q", o.Type)
		}
	}
	switch d.TextVerbosity {
	case "", wire.TextVerbosityLow, wire.TextVerbosityMedium, wire.TextVerbosityHigh:
	default:
		return bad("text_verbosity", "want low, medium or high, got %q", d.TextVerbosity)
	}
	labels := map[string]bool{}
	for i, s := range d.MCPServers {
		field := fmt.Sprintf("mcp_servers[%d]", i)
		if labels[s.ServerLabel] {
			return bad(field+".server_label", "server %q is declared twice", s.ServerLabel)
		}
		labels[s.ServerLabel] = true
		if strings.TrimSpace(s.ServerLabel) == "" {
			return bad(field+".server_label", "required")
		}
		u, err := url.Parse(s.ServerURL)
		switch {
		case err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "":
			return bad(field+".server_url", "want an absolute http or https URL")
		case u.User != nil:
			return bad(field+".server_url", "a URL carries no credentials")
		}
		switch s.ConnectionOrigin {
		case "", wire.MCPOriginService, wire.MCPOriginEnvironment:
		default:
			return bad(field+".connection_origin", "want service or environment (or nothing: Core chooses per Session), got %q", s.ConnectionOrigin)
		}
		if s.BearerSecret != "" && !vault.NameRule.MatchString(s.BearerSecret) {
			return bad(field+".bearer_secret", "a Vault secret's name: %s", vault.NameSyntax)
		}
		if s.AllowedTools != nil {
			seen := map[string]bool{}
			for j, name := range *s.AllowedTools {
				if name == "" || seen[name] {
					return bad(fmt.Sprintf("%s.allowed_tools[%d]", field, j), "tool names are non-empty and listed once")
				}
				seen[name] = true
			}
		}
	}
	return nil
}

// wire is the server as a Run carries it, with origin when the Agent
// leaves the choice to Core.
func (s MCPServer) wire(origin string) wire.MCPHTTPServer {
	if s.ConnectionOrigin != "" {
		origin = s.ConnectionOrigin
	}
	var allowed *[]string
	if s.AllowedTools != nil {
		list := append([]string{}, (*s.AllowedTools)...)
		allowed = &list
	}
	return wire.MCPHTTPServer{ConnectionOrigin: origin, ServerLabel: s.ServerLabel, ServerURL: s.ServerURL, AllowedTools: allowed, Required: s.Required}
}

// BearerSecrets are the Vault secrets the Agent's MCP servers name, by
// server label.
func (d Definition) BearerSecrets() map[string]string {
	out := map[string]string{}
	for _, s := range d.MCPServers {
		if s.BearerSecret != "" {
			out[s.ServerLabel] = s.BearerSecret
		}
	}
	return out
}

// CheckOrigins names the first MCP server whose explicit connection
// origin the Session's Environment cannot carry: service needs a Session
// without a workspace, environment one with (daemon-protocol.txt:189).
func (d Definition) CheckOrigins(local bool) error {
	for i, s := range d.MCPServers {
		switch {
		case s.ConnectionOrigin == wire.MCPOriginService && local:
			return &FieldError{Field: fmt.Sprintf("mcp_servers[%d].connection_origin", i), Detail: "a service-origin server needs a Session without a workspace"}
		case s.ConnectionOrigin == wire.MCPOriginEnvironment && !local:
			return &FieldError{Field: fmt.Sprintf("mcp_servers[%d].connection_origin", i), Detail: "an environment-origin server needs a Session with a registered Environment"}
		}
	}
	return nil
}

// schema is the json_schema output format's schema, nil for text.
func (d Definition) schema() wire.NativeJSON {
	if d.OutputFormat != nil && d.OutputFormat.Type == "json_schema" {
		return wire.NativeJSON(d.OutputFormat.Schema)
	}
	return nil
}

// Features is what admission reads of the Agent (wire.RequiredCapabilities).
func (d Definition) Features() wire.AgentFeatures {
	f := wire.AgentFeatures{
		JSONSchemaOutput:               d.schema() != nil,
		MultiAgentEnabled:              d.MultiAgent != nil && d.MultiAgent.Enabled,
		ToolSearch:                     d.ToolSearch,
		DisableProgrammaticToolCalling: d.DisableProgrammaticToolCalling,
	}
	for _, t := range d.FunctionTools {
		f.Functions = append(f.Functions, wire.AgentFunction{DeferLoading: t.DeferLoading})
	}
	for _, s := range d.MCPServers {
		f.MCPHTTPServers = append(f.MCPHTTPServers, wire.AgentMCPServer{Required: s.Required, VaultCredential: s.BearerSecret != ""})
	}
	return f
}

// Configure puts the Agent into the configuration execution_prepare
// sends and the Session's opt-ins (wire.ApplyOptIns). A server whose
// origin the Agent left to Core gets the Session's: environment with a
// local Environment, service without.
//
// decision: Core freezes the public default before dispatch
// (daemon-protocol.txt:189); the only origin a Run can carry is the one
// that matches its Environment, so that is the default.
func (d Definition) Configure(req *wire.PromptRequest, sc *wire.SessionConfig) {
	if len(d.MCPServers) > 0 {
		origin := wire.MCPOriginService
		if sc.Environment.Local() {
			origin = wire.MCPOriginEnvironment
		}
		servers := make([]wire.MCPHTTPServer, 0, len(d.MCPServers))
		for _, s := range d.MCPServers {
			servers = append(servers, s.wire(origin))
		}
		req.MCPHTTPServers = &servers
	}
	sc.MultiAgentEnabled = d.MultiAgent != nil && d.MultiAgent.Enabled
	sc.TextVerbosity = d.TextVerbosity
	sc.OutputSchema = d.schema()
	sc.DisableProgrammaticToolCalling = d.DisableProgrammaticToolCalling
	req.FunctionTools = d.FunctionTools
	req.ToolSearch = d.ToolSearch
	if d.Model != "" {
		m := d.Model
		req.AgentOptions = ensureOptions(req.AgentOptions)
		req.AgentOptions.Model = &m
	}
	if d.Instructions != "" {
		p := d.Instructions
		req.AgentOptions = ensureOptions(req.AgentOptions)
		req.AgentOptions.SystemPrompt = &p
	}
}

func ensureOptions(o *wire.AgentOptions) *wire.AgentOptions {
	if o == nil {
		return &wire.AgentOptions{}
	}
	return o
}

// CheckKind checks an agent kind as the public API takes it: a short
// name (at most wire.MaxAgentKindBytes) of printable characters without
// spaces, since it is matched against declarations, stored and logged.
// The wire itself is more tolerant (only NUL is refused there).
func CheckKind(kind string) error {
	switch {
	case kind == "":
		return fmt.Errorf("required")
	case len(kind) > wire.MaxAgentKindBytes:
		return fmt.Errorf("at most %d bytes", wire.MaxAgentKindBytes)
	case !utf8.ValidString(kind):
		return fmt.Errorf("not valid UTF-8")
	}
	for _, r := range kind {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%q holds a space or a control character", kind)
		}
	}
	return nil
}
