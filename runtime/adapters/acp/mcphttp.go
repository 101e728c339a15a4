package acp

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentwire/agentwire/wire"
)

// Core's HTTP MCP servers (prompt_request mcp_http_servers). The agent
// speaks streamable HTTP to them itself: each is an http server of
// session/new (and session/load) under its label, with its bearer token,
// when Core sends one, as an Authorization header.
//
// A bearer token is a transient secret (wire.MCPHTTPServer): it travels
// only inside session/new on the agent's stdin, never on a command line,
// in the environment, a file or a log; errors name a server by its label.
//
// decision: both connection origins are honoured by the agent connecting
// from the device it runs on, as for the Claude adapter: for an
// environment origin it runs in the bound workspace of the self-hosted
// Environment on this device; for a service origin the Session has no
// Environment and the Runtime is the execution's service side. The wire
// validator already matched each origin with the request's environment
// (daemon-protocol.txt:189).

// checkMCPServers refuses what the adapter cannot pass to the agent
// faithfully, naming the server by its label (never its token).
func checkMCPServers(a Agent, servers []wire.MCPHTTPServer) error {
	seen := map[string]bool{}
	for i, s := range servers {
		what := fmt.Sprintf("acp adapter: mcp_http_servers[%d] (%q)", i, s.ServerLabel)
		switch {
		case !a.MCPHTTP || a.MCPToolName == nil:
			return fmt.Errorf("%s: kind %s does not take HTTP MCP servers", what, a.Kind)
		case s.ConnectionOrigin != wire.MCPOriginService && s.ConnectionOrigin != wire.MCPOriginEnvironment:
			return fmt.Errorf("%s: connection_origin %q is neither service nor environment", what, s.ConnectionOrigin)
		case s.ServerLabel == fnServerName:
			// decision: the adapter's own server serves Core's function
			// tools under this name; renaming Core's server would show the
			// model other tool names than the Agent declared.
			return fmt.Errorf("%s: the label is reserved for the adapter's function tools", what)
		case seen[s.ServerLabel]:
			return fmt.Errorf("%s: the label is given twice", what)
		}
		seen[s.ServerLabel] = true
		if _, err := a.MCPToolName(s.ServerLabel, "t"); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if s.AllowedTools != nil {
			for _, tool := range *s.AllowedTools {
				if _, err := a.MCPToolName(s.ServerLabel, tool); err != nil {
					return fmt.Errorf("%s: allowed_tools: %w", what, err)
				}
			}
		}
	}
	return nil
}

// coreServers is Core's servers as session/new names them.
func coreServers(servers []wire.MCPHTTPServer) []sdk.McpServer {
	out := make([]sdk.McpServer, 0, len(servers))
	for _, s := range servers {
		headers := []sdk.HttpHeader{}
		if s.BearerToken != nil {
			headers = append(headers, sdk.HttpHeader{Name: "Authorization", Value: "Bearer " + *s.BearerToken})
		}
		out = append(out, sdk.McpServer{Http: &sdk.McpServerHttpInline{Type: "http", Name: s.ServerLabel, Url: s.ServerURL, Headers: headers}})
	}
	return out
}

// awaitRequired checks, before the native session exists, that every
// required server answers MCP's initialize with its credential.
//
// decision: a required server is checked during the preparation, which
// is earlier and cleaner than the Run: nothing reached the model, and
// NewExecutor's error is finite and names the server
// (daemon-protocol.txt:47, the mcp_http_required row). ACP gives a client
// no way to learn whether the agent connected a server (Gemini CLI goes on
// without one it could not reach), so the adapter connects once itself,
// from the same device, over the same transport and with the same
// credential. A server that goes away between this check and the agent's
// own connection shows only as failed tool calls.
func awaitRequired(ctx context.Context, servers []wire.MCPHTTPServer) error {
	var down []string
	for _, s := range servers {
		if !s.Required {
			continue
		}
		if err := probeMCP(ctx, s); err != nil {
			down = append(down, fmt.Sprintf("%q (%v)", s.ServerLabel, redact(err, s)))
		}
	}
	if len(down) > 0 {
		return fmt.Errorf("acp adapter: a required MCP server is not reachable: %s", strings.Join(down, ", "))
	}
	return nil
}

// probeMCP opens and closes one MCP session with s.
func probeMCP(ctx context.Context, s wire.MCPHTTPServer) error {
	hdr := http.Header{}
	if s.BearerToken != nil {
		hdr.Set("Authorization", "Bearer "+*s.BearerToken)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "agentwire", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.ServerURL, MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: withHeaders{hdr}}}, nil)
	if err != nil {
		return err
	}
	return cs.Close()
}

// redact keeps s's token out of an error's text.
func redact(err error, s wire.MCPHTTPServer) string {
	text := err.Error()
	if s.BearerToken != nil && *s.BearerToken != "" {
		text = strings.ReplaceAll(text, *s.BearerToken, "[token]")
	}
	return text
}

// withHeaders adds headers to every request of the probe.
type withHeaders struct{ h http.Header }

func (t withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}
