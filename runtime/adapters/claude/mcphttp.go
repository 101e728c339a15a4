package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/agentwire/agentwire/wire"
)

// HTTP MCP servers. Core's servers (prompt_request mcp_http_servers) are
// handed to Claude Code itself, which speaks streamable HTTP to them: each
// is an "http" server of --mcp-config under its label, next to the
// adapter's own "sdk" server. The model sees a server's tool t as
// mcp__<label>__t, and Claude Code asks can_use_tool before it calls one.
//
// A bearer token is a transient secret (wire.MCPHTTPServer): it goes into
// an Authorization header of a configuration file only the Runtime's user
// can read, in the Session's state directory, never on the command line
// (argv is world-readable), in the environment or a log; the file is
// removed when the Executor closes. Claude Code echoes the configuration,
// header included, in its mcp_status answer, so that answer is decoded for
// names and statuses only and never logged.
//
// decision: both connection origins are honoured, by the CLI connecting
// from the device it runs on. For an environment origin the CLI runs in
// the bound workspace of the self-hosted Environment on this device, which
// is where the Environment connects from; for a service origin the Session
// has no Environment (disable_execution_environment) and the Runtime is
// the service side of the execution, so its device is the service's. The
// wire validator has already matched each origin with the request's
// environment (wire.PromptRequest.Validate, daemon-protocol.txt:189), and
// the protocol asks nothing of the adapter beyond connecting from where
// the origin says.

// mcpLabel is the server labels the adapter passes to Claude Code: its
// tool names are mcp__<label>__<tool>, so a label must be a plain name
// (Claude Code would rewrite any other character, and the model would see
// another name than the Agent declared).
var mcpLabel = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// mcpHTTP is the Executor's view of Core's HTTP MCP servers.
type mcpHTTP struct {
	servers []wire.MCPHTTPServer
	// file is the 0600 configuration file passed to the CLI ("" = none).
	file string
}

// checkMCPServers refuses what the adapter cannot pass to Claude Code
// faithfully, naming the server by its label (never its token).
func checkMCPServers(servers []wire.MCPHTTPServer) error {
	for i, s := range servers {
		switch {
		case s.ConnectionOrigin != wire.MCPOriginService && s.ConnectionOrigin != wire.MCPOriginEnvironment:
			return fmt.Errorf("claude adapter: mcp_http_servers[%d]: connection_origin %q is neither service nor environment", i, s.ConnectionOrigin)
		case !mcpLabel.MatchString(s.ServerLabel):
			return fmt.Errorf("claude adapter: mcp_http_servers[%d]: server label %q is not a plain name (letters, digits, _ and -; Claude Code names its tools mcp__<label>__<tool>)", i, s.ServerLabel)
		case s.ServerLabel == mcpServerName:
			// decision: the adapter's own server serves Core's function
			// tools under this name; renaming Core's server would show the
			// model other tool names than the Agent declared, so the
			// configuration is refused instead.
			return fmt.Errorf("claude adapter: mcp_http_servers[%d]: server label %q is reserved for the adapter's function tools", i, s.ServerLabel)
		}
	}
	return nil
}

// writeMCPConfig writes the servers' --mcp-config file into dir, readable
// only by the Runtime's user.
func writeMCPConfig(dir string, servers []wire.MCPHTTPServer) (string, error) {
	type server struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers,omitempty"`
	}
	cfg := map[string]map[string]server{"mcpServers": {}}
	for _, s := range servers {
		srv := server{Type: "http", URL: s.ServerURL}
		if s.BearerToken != nil {
			srv.Headers = map[string]string{"Authorization": "Bearer " + *s.BearerToken}
		}
		cfg["mcpServers"][s.ServerLabel] = srv
	}
	body, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("claude adapter: encoding the MCP configuration: %w", err)
	}
	// CreateTemp makes the file 0600 and names it uniquely, so two
	// Executors of one Session never share one.
	f, err := os.CreateTemp(dir, "mcp-*.json")
	if err != nil {
		return "", fmt.Errorf("claude adapter: writing the MCP configuration: %w", err)
	}
	_, werr := f.Write(body)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return "", fmt.Errorf("claude adapter: writing the MCP configuration: %w", err)
	}
	return f.Name(), nil
}

// remove deletes the configuration file; a file already gone is fine.
func (m *mcpHTTP) remove() error {
	if m == nil || m.file == "" {
		return nil
	}
	if err := os.Remove(m.file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("claude adapter: removing the MCP configuration: %w", err)
	}
	m.file = ""
	return nil
}

// server is the HTTP server whose tool the model calls by name, and the
// tool's own name.
func (m *mcpHTTP) server(tool string) (wire.MCPHTTPServer, string, bool) {
	var best wire.MCPHTTPServer
	var tname string
	found := false
	if m == nil {
		return best, "", false
	}
	for _, s := range m.servers {
		// The longest label wins: labels may hold "__", so "mcp__a__b__t"
		// is tool t of server a__b before it is tool b__t of server a.
		if name, ok := strings.CutPrefix(tool, "mcp__"+s.ServerLabel+"__"); ok && (!found || len(s.ServerLabel) > len(best.ServerLabel)) {
			best, tname, found = s, name, true
		}
	}
	return best, tname, found
}

// mcpServerState is one server's entry in mcp_status and in the init
// message: the adapter reads no other member (the configuration Claude
// Code echoes there carries the bearer token).
type mcpServerState struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// mcpPending is Claude Code's status of a server still connecting.
const mcpPending = "pending"

// mcpConnected is its status of a server whose tools the model can call.
const mcpConnected = "connected"

// awaitRequired waits, within ctx, until Claude Code finished connecting
// to every server, then fails unless each required one is connected.
//
// decision: a required server is checked during the preparation, which
// is earlier and cleaner than the Run: nothing was sent to the model, and
// NewExecutor's error is finite and names the server
// (daemon-protocol.txt:47, the mcp_http_required row). Claude Code
// connects in the background after initialize (mcp_status says "pending")
// and has no event for the end of it, so the adapter asks again, at a
// growing interval, bounded by the start timeout. An optional server is
// not waited for: the CLI waits for it before its first Turn anyway, and
// a failed one is logged from the Turn's init message. Later Turns of the
// Executor are not checked again: Claude Code still reports a server
// connected after it went away (its init message and mcp_status alike), so
// a server lost meanwhile shows only as failed tool calls.
func (e *executor) awaitRequired(ctx context.Context) error {
	required := map[string]bool{}
	for _, s := range e.mcp.servers {
		if s.Required {
			required[s.ServerLabel] = true
		}
	}
	if len(required) == 0 {
		return nil
	}
	wait := 10 * time.Millisecond
	for {
		raw, err := e.ch.Request(ctx, "mcp_status", nil)
		if err != nil {
			return fmt.Errorf("asking Claude Code for the MCP servers' status: %w", err)
		}
		var st struct {
			MCPServers []mcpServerState `json:"mcpServers"`
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			return fmt.Errorf("the MCP servers' status does not decode: %w", err)
		}
		status := map[string]string{}
		pending := false
		for _, s := range st.MCPServers {
			if _, ours := required[s.Name]; ours {
				status[s.Name] = s.Status
				pending = pending || s.Status == mcpPending
			}
		}
		if !pending {
			var down []string
			for label := range required {
				if status[label] != mcpConnected {
					state := status[label]
					if state == "" {
						state = "unknown to Claude Code"
					}
					down = append(down, fmt.Sprintf("%q (%s)", label, state))
				}
			}
			if len(down) == 0 {
				return nil
			}
			sort.Strings(down)
			return &MCPServerError{Servers: down}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("the required MCP servers did not finish connecting: %w", ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, 250*time.Millisecond)
	}
}

// MCPServerError fails a preparation whose required HTTP MCP servers are
// not connected; it names each by label with Claude Code's status.
type MCPServerError struct {
	Servers []string
}

func (e *MCPServerError) Error() string {
	return "a required MCP server is not connected: " + strings.Join(e.Servers, ", ")
}

// logMCPInit logs, from a Turn's init message, each HTTP server that is
// not connected: an optional one the Turn runs without (a required one
// failed the preparation already).
func (e *executor) logMCPInit(raw json.RawMessage) {
	if e.mcp == nil || len(e.mcp.servers) == 0 {
		return
	}
	var init struct {
		MCPServers []mcpServerState `json:"mcp_servers"`
	}
	if json.Unmarshal(raw, &init) != nil {
		return
	}
	status := map[string]string{}
	for _, s := range init.MCPServers {
		status[s.Name] = s.Status
	}
	for _, s := range e.mcp.servers {
		if st := status[s.ServerLabel]; st != mcpConnected {
			e.log.Warn("claude adapter: an MCP server is not connected; the Turn runs without its tools",
				"server_label", s.ServerLabel, "required", s.Required, "status", st)
		}
	}
}

// allowMCPTool: the CLI asks permission to call a tool of one of Core's
// HTTP servers. decision: allowed_tools restricts which of the server's
// tools may run at all (daemon-protocol.txt is silent; wire.MCPHTTPServer
// says a list allows exactly those names): a tool outside the list is
// denied by the adapter without asking Core, since no decision of Core's
// could make it allowed. A listed tool (or any, when the list is null) is
// asked as every other tool is, as a permission_request.
func (l *turnLoop) allowMCPTool(requestID, tool string) (bool, error) {
	s, name, ok := l.e.mcp.server(tool)
	if !ok || s.AllowedTools == nil {
		return false, nil
	}
	for _, allowed := range *s.AllowedTools {
		if allowed == name {
			return false, nil
		}
	}
	return true, l.e.ch.Answer(l.bg, requestID, map[string]any{"behavior": "deny",
		"message": "agentwire: the tool " + name + " of MCP server " + s.ServerLabel + " is not in the Agent's allowed tools"})
}
