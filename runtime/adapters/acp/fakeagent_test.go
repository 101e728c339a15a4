package acp

// A scripted fake ACP agent, built on the SDK's agent side and run as a
// real process: the test binary itself, re-executed with AW_ACP_FAKE set
// (TestMain), so the adapter drives it over real pipes exactly as it
// drives gemini --acp. What a prompt does is chosen by its first word.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	fakeEnv       = "AW_ACP_FAKE"     // "agent": the fake agent; "child": its stubborn child
	noHTTPEnv     = "AW_ACP_NO_HTTP"  // "1": the agent does not declare mcpCapabilities.http
	stubbornEnv   = "AW_ACP_STUBBORN" // "1": the agent ignores stdin EOF and SIGTERM
	fakeSavedID   = "fake-saved"      // the one saved session the fake loads
	fakeOptAlways = "always"
	fakeOptOnce   = "once"
	fakeOptNo     = "no"
)

func TestMain(m *testing.M) {
	switch os.Getenv(fakeEnv) {
	case "agent":
		runFakeAgent()
		os.Exit(0)
	case "child":
		// A child that outlives a polite stop: only the group's SIGKILL
		// ends it. The sleep is the process's life, not a test wait.
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
		time.Sleep(time.Hour)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runFakeAgent() {
	stubborn := os.Getenv(stubbornEnv) == "1"
	if stubborn {
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	}
	f := &fakeAgent{cancels: map[sdk.SessionId]chan struct{}{}, servers: map[sdk.SessionId][]sdk.McpServer{}}
	f.conn = sdk.NewAgentSideConnection(f, os.Stdout, os.Stdin)
	<-f.conn.Done()
	if stubborn {
		// Some ACP agents do not exit on stdin EOF (harness notes):
		// only the process group's SIGKILL ends this one.
		time.Sleep(time.Hour)
	}
}

// fakeAgent is the agent side of the fake.
type fakeAgent struct {
	conn *sdk.AgentSideConnection

	mu      sync.Mutex
	n       int
	cancels map[sdk.SessionId]chan struct{} // the running prompt's, closed by session/cancel
	servers map[sdk.SessionId][]sdk.McpServer
}

func (f *fakeAgent) Authenticate(context.Context, sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

func (f *fakeAgent) Initialize(context.Context, sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	caps := sdk.AgentCapabilities{LoadSession: true, McpCapabilities: sdk.McpCapabilities{Http: os.Getenv(noHTTPEnv) != "1"}}
	return sdk.InitializeResponse{ProtocolVersion: sdk.ProtocolVersionNumber, AgentCapabilities: caps, AuthMethods: []sdk.AuthMethod{}}, nil
}

func (f *fakeAgent) Cancel(_ context.Context, p sdk.CancelNotification) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ch, ok := f.cancels[p.SessionId]; ok {
		close(ch)
		delete(f.cancels, p.SessionId)
	}
	return nil
}

func (f *fakeAgent) CloseSession(context.Context, sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	return sdk.CloseSessionResponse{}, nil
}

func (f *fakeAgent) ListSessions(context.Context, sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, nil
}

func (f *fakeAgent) NewSession(_ context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	id := sdk.SessionId(fmt.Sprintf("fake-%d", f.n))
	f.servers[id] = p.McpServers
	return sdk.NewSessionResponse{SessionId: id}, nil
}

// LoadSession makes the fake a session loader (sdk.AgentLoader) that knows
// one saved session; an unknown one is a JSON-RPC error, as a strict
// resume needs.
func (f *fakeAgent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	if p.SessionId != fakeSavedID {
		return sdk.LoadSessionResponse{}, &sdk.RequestError{Code: -32602, Message: "fake: no saved session " + string(p.SessionId)}
	}
	// The history a load replays: outside any Run, the adapter drops it.
	f.say(ctx, p.SessionId, sdk.UpdateAgentMessageText("history"))
	return sdk.LoadSessionResponse{}, nil
}

func (f *fakeAgent) ResumeSession(context.Context, sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, errors.New("fake: not supported")
}

func (f *fakeAgent) SetSessionConfigOption(context.Context, sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, nil
}

func (f *fakeAgent) SetSessionMode(context.Context, sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	return sdk.SetSessionModeResponse{}, nil
}

var (
	_ sdk.Agent       = (*fakeAgent)(nil)
	_ sdk.AgentLoader = (*fakeAgent)(nil)
)

func (f *fakeAgent) say(ctx context.Context, sid sdk.SessionId, u sdk.SessionUpdate) {
	_ = f.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: sid, Update: u})
}

// Prompt plays the script its first word names.
func (f *fakeAgent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	var text string
	for _, b := range p.Prompt {
		if b.Text != nil {
			text += b.Text.Text
		}
	}
	sid := p.SessionId
	cancel := make(chan struct{})
	f.mu.Lock()
	f.cancels[sid] = cancel
	f.mu.Unlock()
	end := sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}
	word, arg, _ := strings.Cut(text, " ")
	switch word {
	case "CHUNKS":
		f.say(ctx, sid, sdk.UpdateAgentThoughtText("pondering"))
		f.say(ctx, sid, sdk.UpdateAgentMessageText("Hel"))
		f.say(ctx, sid, sdk.UpdateAgentMessageText("lo"))
	case "TOOL":
		f.say(ctx, sid, sdk.StartToolCall("t1", "ls -la", sdk.WithStartKind(sdk.ToolKindExecute),
			sdk.WithStartStatus(sdk.ToolCallStatusPending), sdk.WithStartRawInput(map[string]any{"command": "ls -la"})))
		f.say(ctx, sid, sdk.UpdateToolCall("t1", sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted),
			sdk.WithUpdateRawOutput(map[string]any{"stdout": "a b"})))
		f.say(ctx, sid, sdk.UpdateAgentMessageText("listed"))
	case "ASK", "STEER":
		if word == "STEER" {
			f.say(ctx, sid, sdk.UpdateAgentMessageText("first"))
		}
		kind := sdk.ToolKindExecute
		title := "rm x"
		r, err := f.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{SessionId: sid,
			ToolCall: sdk.ToolCallUpdate{ToolCallId: "t2", Title: &title, Kind: &kind},
			Options: []sdk.PermissionOption{{OptionId: fakeOptAlways, Name: "Always", Kind: sdk.PermissionOptionKindAllowAlways},
				{OptionId: fakeOptOnce, Name: "Once", Kind: sdk.PermissionOptionKindAllowOnce},
				{OptionId: fakeOptNo, Name: "No", Kind: sdk.PermissionOptionKindRejectOnce}}})
		switch {
		case err != nil && ctx.Err() != nil:
			// The SDK cancels the prompt's context on session/cancel.
			end.StopReason = sdk.StopReasonCancelled
		case err != nil:
			f.say(ctx, sid, sdk.UpdateAgentMessageText("askerr:"+err.Error()))
		case r.Outcome.Selected != nil:
			f.say(ctx, sid, sdk.UpdateAgentMessageText("selected:"+string(r.Outcome.Selected.OptionId)))
		default:
			f.say(ctx, sid, sdk.UpdateAgentMessageText("cancelled"))
			end.StopReason = sdk.StopReasonCancelled
		}
	case "CALL", "NOAUTH":
		// CALL calls the function arg names with {"q":"wire"} on the MCP
		// server session/new named; NOAUTH calls it without the headers.
		f.mu.Lock()
		servers := f.servers[sid]
		f.mu.Unlock()
		text, err := fakeCall(ctx, servers, arg, word == "CALL")
		switch {
		case err != nil && ctx.Err() != nil:
			end.StopReason = sdk.StopReasonCancelled
		case err != nil:
			f.say(ctx, sid, sdk.UpdateAgentMessageText("callerr:"+err.Error()))
		default:
			f.say(ctx, sid, sdk.UpdateAgentMessageText(text))
		}
	case "HANG":
		f.say(ctx, sid, sdk.UpdateAgentMessageText("waiting"))
		select {
		case <-cancel:
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		case <-ctx.Done():
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		}
	case "READ":
		r, err := f.conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: sid, Path: arg})
		if err != nil {
			f.say(ctx, sid, sdk.UpdateAgentMessageText("readerr:"+err.Error()))
		} else {
			f.say(ctx, sid, sdk.UpdateAgentMessageText("read:"+r.Content))
		}
	case "WRITE":
		path, content, _ := strings.Cut(arg, " ")
		if _, err := f.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: sid, Path: path, Content: content}); err != nil {
			f.say(ctx, sid, sdk.UpdateAgentMessageText("writeerr:"+err.Error()))
		} else {
			f.say(ctx, sid, sdk.UpdateAgentMessageText("wrote"))
		}
	case "TERM":
		if _, err := f.conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{SessionId: sid, Command: "ls"}); err != nil {
			f.say(ctx, sid, sdk.UpdateAgentMessageText("termerr:"+err.Error()))
		} else {
			f.say(ctx, sid, sdk.UpdateAgentMessageText("terminal"))
		}
	case "PIDS":
		// A child in the agent's process group that ignores SIGTERM.
		child := exec.Command(os.Args[0], "-test.run=^$")
		child.Env = append(os.Environ(), fakeEnv+"=child")
		if err := child.Start(); err != nil {
			f.say(ctx, sid, sdk.UpdateAgentMessageText("spawnerr:"+err.Error()))
			break
		}
		go func() { _ = child.Wait() }()
		f.say(ctx, sid, sdk.UpdateAgentMessageText(fmt.Sprintf("pids:%d %d", os.Getpid(), child.Process.Pid)))
	default:
		f.say(ctx, sid, sdk.UpdateAgentMessageText("got:"+text))
	}
	f.mu.Lock()
	delete(f.cancels, sid)
	f.mu.Unlock()
	return end, nil
}

// fakeCall calls tool on the first HTTP MCP server of servers, as an MCP
// client over streamable HTTP, with the server's headers when auth; it
// returns "result:" and the result's text, or "isError:" and it.
func fakeCall(ctx context.Context, servers []sdk.McpServer, tool string, auth bool) (string, error) {
	if len(servers) == 0 || servers[0].Http == nil {
		return "", errors.New("no HTTP MCP server was named")
	}
	s := servers[0].Http
	hdr := http.Header{}
	if auth {
		for _, h := range s.Headers {
			hdr.Set(h.Name, h.Value)
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.Url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: headerTransport{hdr}}}, nil)
	if err != nil {
		return "", err
	}
	defer func() { _ = cs.Close() }()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"q": "wire"}})
	if err != nil {
		return "", err
	}
	var texts []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	if r.IsError {
		return "isError:" + strings.Join(texts, "|"), nil
	}
	return "result:" + strings.Join(texts, "|"), nil
}

// headerTransport adds the server's headers to every request.
type headerTransport struct{ h http.Header }

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.h {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}
