package harnesstest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// The HTTP MCP scenarios fail when an adapter breaks what they prove. A
// small fake adapter declares the three capabilities and calls the kit's
// server itself; each fault runs the scenarios in a child process (this
// test binary again), since a failing scenario fails the test running it.

const mcpFaultEnv = "AGENTWIRE_HARNESSTEST_MCP_FAULT"

func TestMCPScenariosCatchFaults(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	if fault := os.Getenv(mcpFaultEnv); fault != "" {
		k := mcpFakeKit(t, fault)
		k.either(t, "mcp_http_tools", k.mcpTools, nil)
		k.either(t, "mcp_http_required", k.mcpRequired, nil)
		k.either(t, "mcp_http_bearer_auth", k.mcpBearer, nil)
		t.Log("\n" + k.report.String())
		return
	}
	report := regexp.MustCompile(`(pass|FAIL)\s+harness\s+(\S+)`)
	all := []string{"mcp_http_tools", "mcp_http_tools/allowed_tools", "mcp_http_required", "mcp_http_required/down",
		"mcp_http_required/optional_down", "mcp_http_bearer_auth"}
	// A scenario nested in a capability's (…/allowed_tools in
	// mcp_http_tools) fails that one too.
	for fault, failing := range map[string][]string{
		"none": nil,
		// Every tool runs, whatever allowed_tools says.
		"allowed": {"mcp_http_tools", "mcp_http_tools/allowed_tools"},
		// A required server that is down is not checked: the Turn runs.
		"required": {"mcp_http_required", "mcp_http_required/down"},
		// The credential never reaches the server.
		"token": {"mcp_http_bearer_auth"},
		// The credential is reported in the tool call's arguments.
		"leak": {"mcp_http_bearer_auth"},
	} {
		t.Run(fault, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestMCPScenariosCatchFaults$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), mcpFaultEnv+"="+fault)
			out, err := cmd.CombinedOutput()
			if len(failing) > 0 {
				var exit *exec.ExitError
				require.True(t, errors.As(err, &exit), "the child with fault %s should fail: %v\n%s", fault, err, out)
			} else {
				require.NoError(t, err, "the faultless child fails:\n%s", out)
			}
			got := map[string]string{}
			for _, m := range report.FindAllStringSubmatch(string(out), -1) {
				got[m[2]] = m[1]
			}
			for _, name := range all {
				want := "pass"
				for _, f := range failing {
					if f == name {
						want = "FAIL"
					}
				}
				assert.Equal(t, want, got[name], "%s under fault %s:\n%s", name, fault, out)
			}
		})
	}
}

// mcpFakeKit is a kit over the fake adapter with fault injected.
func mcpFakeKit(t *testing.T, fault string) *kit {
	a := &mcpFake{fault: fault, plans: map[string]Plan{}}
	cfg := Config{Adapter: a, Timeout: 20 * time.Second, NoDaemon: true, Default: func(_ *testing.T, s *Scenario) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.plans[s.SessionID] = s.Plan
	}}
	decl := a.Declaration()
	require.NoError(t, decl.Validate())
	return newKit(cfg, decl)
}

// mcpFake is a Harness that calls HTTP MCP tools itself, over plain
// JSON-RPC POSTs, and says what a plan says.
type mcpFake struct {
	fault string
	mu    sync.Mutex
	plans map[string]Plan // by Session ID
}

func (a *mcpFake) Declaration() harness.Declaration {
	var c wire.AgentKindCapabilities
	for _, f := range wire.CapabilityFields() {
		*f.Of(&c) = wire.Unsupported
	}
	for _, name := range append(append([]string(nil), alwaysRequired...), "environment_none", "subagent_control", "mcp_http_tools", "mcp_http_required", "mcp_http_bearer_auth") {
		f, _ := wire.CapabilityFieldByName(name)
		*f.Of(&c) = wire.Supported
	}
	return harness.Declaration{Kind: "mcp-fake", Available: true, Version: "1", Capabilities: c}
}

func (a *mcpFake) NewExecutor(ctx context.Context, cfg harness.ExecutorConfig) (harness.Executor, error) {
	if err := harness.CheckConfiguration(cfg.Declaration.Capabilities, cfg.Configuration); err != nil {
		return nil, err
	}
	e := &mcpFakeExec{a: a, sid: cfg.SessionID}
	if p := cfg.Configuration.MCPHTTPServers; p != nil {
		e.servers = *p
	}
	for _, s := range e.servers {
		if s.Required && a.fault != "required" {
			if _, err := e.call(ctx, s, "initialize", map[string]any{"protocolVersion": "2025-06-18"}); err != nil {
				return nil, fmt.Errorf("mcp-fake: required MCP server %q is not connected", s.ServerLabel)
			}
		}
	}
	return e, nil
}

type mcpFakeExec struct {
	a       *mcpFake
	sid     string
	servers []wire.MCPHTTPServer
}

// call posts one JSON-RPC request and returns its result.
func (e *mcpFakeExec) call(ctx context.Context, s wire.MCPHTTPServer, method string, params any) (json.RawMessage, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.ServerURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.BearerToken != nil && e.a.fault != "token" {
		req.Header.Set("Authorization", "Bearer "+*s.BearerToken)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Result json.RawMessage `json:"result"`
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, err
	}
	return out.Result, nil
}

func (e *mcpFakeExec) Run(ctx context.Context, turn harness.Turn, emit harness.Emit) (wire.Done, error) {
	e.a.mu.Lock()
	plan := e.a.plans[e.sid]
	e.a.mu.Unlock()
	var text string
	var seq uint64
	say := func(s string) error {
		seq++
		text += s
		return emit(ctx, wire.Delta{Delta: s, Sequence: seq})
	}
	for i, st := range plan {
		switch {
		case len(st.Say) > 0:
			for _, s := range st.Say {
				if err := say(s); err != nil {
					return wire.Done{}, err
				}
			}
		case st.MCP != nil:
			if err := e.mcpStep(ctx, fmt.Sprintf("call-%d", i), st.MCP, emit, say); err != nil {
				return wire.Done{}, err
			}
		}
	}
	return wire.Done{Content: text}, nil
}

func (e *mcpFakeExec) mcpStep(ctx context.Context, id string, c *MCPCall, emit harness.Emit, say func(string) error) error {
	var srv wire.MCPHTTPServer
	for _, s := range e.servers {
		if s.ServerLabel == c.Server {
			srv = s
		}
	}
	allowed := srv.AllowedTools == nil || e.a.fault == "allowed"
	if srv.AllowedTools != nil {
		for _, name := range *srv.AllowedTools {
			allowed = allowed || name == c.Tool
		}
	}
	args := wire.NativeJSON(c.Args)
	if e.a.fault == "leak" && srv.BearerToken != nil {
		args = wire.NativeJSON(fmt.Sprintf(`{"auth":%q}`, *srv.BearerToken))
	}
	name := c.Server + "." + c.Tool
	if err := emit(ctx, wire.ToolCall{ID: id, Name: name, Stage: wire.ToolStageBefore, Args: args}); err != nil {
		return err
	}
	if !allowed {
		return emit(ctx, wire.ToolCall{ID: id, Name: name, Stage: wire.ToolStageAfter,
			Observation: &wire.ToolObservation{Kind: "mcp", Status: "failed", Name: name}})
	}
	raw, err := e.call(ctx, srv, "tools/call", map[string]any{"name": c.Tool, "arguments": json.RawMessage(c.Args)})
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	status := "completed"
	if err != nil || json.Unmarshal(raw, &res) != nil || len(res.Content) == 0 {
		status = "failed"
	}
	if err := emit(ctx, wire.ToolCall{ID: id, Name: name, Stage: wire.ToolStageAfter,
		Observation: &wire.ToolObservation{Kind: "mcp", Status: status, Name: name}}); err != nil {
		return err
	}
	if status == "failed" || c.Outside {
		return nil
	}
	return say(res.Content[0].Text)
}

func (e *mcpFakeExec) Close(context.Context) error { return nil }
