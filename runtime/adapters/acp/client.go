package acp

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"
)

// client is the adapter's side of ACP: the agent's notifications and
// requests to its client.
type client struct{ e *executor }

// current is the running Turn when sid is the executor's session.
func (c *client) current(sid sdk.SessionId) *turn {
	c.e.mu.Lock()
	defer c.e.mu.Unlock()
	if string(sid) != c.e.sessionID {
		return nil
	}
	return c.e.cur
}

// SessionUpdate maps one update into the running Turn.
//
// decision: an update outside a Run (the history session/load replays,
// command lists before the first prompt) has no Run to report to and is
// dropped: the protocol's frames belong to a Run (daemon-protocol.txt:72).
func (c *client) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	if t := c.current(n.SessionId); t != nil {
		t.update(n.Update)
		return nil
	}
	c.e.replay.seen()
	return nil
}

// RequestPermission asks Core through the running Turn and waits for its
// decision or the Turn's end.
func (c *client) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	t := c.current(p.SessionId)
	if t == nil {
		// decision: a request outside a Run cannot be asked: nothing runs
		// unasked, so it is answered cancelled.
		return cancelledOutcome(), nil
	}
	return t.askPermission(ctx, p)
}

func cancelledOutcome() sdk.RequestPermissionResponse {
	return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{}}}
}

// errOutside refuses a path outside the Session's workspace.
var errOutside = errors.New("outside the Session's workspace")

// relPath is p, an absolute path the agent sent, relative to the
// workspace; a path outside it is refused. The workspace's os.Root then
// refuses what escapes through symbolic links.
func (c *client) relPath(p string) (string, error) {
	if !utf8.ValidString(p) || strings.ContainsRune(p, 0) {
		return "", sdk.NewInvalidParams(map[string]any{"path": "not valid UTF-8 without NUL"})
	}
	if !filepath.IsAbs(p) {
		return "", sdk.NewInvalidParams(map[string]any{"path": "must be absolute (ACP file paths are)"})
	}
	rel, err := filepath.Rel(c.e.wsDir, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", &sdk.RequestError{Code: -32602, Message: fmt.Sprintf("%s: %v", p, errOutside)}
	}
	return filepath.ToSlash(rel), nil
}

// ReadTextFile serves fs/read_text_file inside the workspace only,
// bounded (Config.MaxReadBytes); line (1-based) and limit select lines.
func (c *client) ReadTextFile(_ context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	if c.current(p.SessionId) == nil {
		return sdk.ReadTextFileResponse{}, &sdk.RequestError{Code: -32600, Message: "no prompt of this session is running"}
	}
	rel, err := c.relPath(p.Path)
	if err != nil {
		return sdk.ReadTextFileResponse{}, err
	}
	b, err := c.e.ws.ReadFile(rel, c.e.cfg.MaxReadBytes)
	if err != nil {
		return sdk.ReadTextFileResponse{}, &sdk.RequestError{Code: -32603, Message: fmt.Sprintf("%s: %v", p.Path, err)}
	}
	if b.Truncated {
		return sdk.ReadTextFileResponse{}, &sdk.RequestError{Code: -32603, Message: fmt.Sprintf("%s: larger than %d bytes", p.Path, c.e.cfg.MaxReadBytes)}
	}
	if !utf8.Valid(b.Data) {
		return sdk.ReadTextFileResponse{}, &sdk.RequestError{Code: -32603, Message: p.Path + ": not UTF-8 text"}
	}
	text := string(b.Data)
	if p.Line != nil || p.Limit != nil {
		text = lines(text, p.Line, p.Limit)
	}
	return sdk.ReadTextFileResponse{Content: text}, nil
}

// lines is the lines of text from line (1-based; nil = 1), at most limit
// of them (nil = all).
func lines(text string, line, limit *int) string {
	all := strings.SplitAfter(text, "\n")
	from := 0
	if line != nil && *line > 1 {
		from = min(*line-1, len(all))
	}
	to := len(all)
	if limit != nil && *limit >= 0 {
		to = min(from+*limit, len(all))
	}
	return strings.Join(all[from:to], "")
}

// WriteTextFile serves fs/write_text_file inside the workspace only,
// through the workspace's confined writer (a temporary file renamed in
// place).
func (c *client) WriteTextFile(_ context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	if c.current(p.SessionId) == nil {
		return sdk.WriteTextFileResponse{}, &sdk.RequestError{Code: -32600, Message: "no prompt of this session is running"}
	}
	rel, err := c.relPath(p.Path)
	if err != nil {
		return sdk.WriteTextFileResponse{}, err
	}
	if !utf8.ValidString(p.Content) {
		return sdk.WriteTextFileResponse{}, sdk.NewInvalidParams(map[string]any{"content": "not valid UTF-8"})
	}
	if err := c.e.ws.WriteFile(rel, []byte(p.Content)); err != nil {
		return sdk.WriteTextFileResponse{}, &sdk.RequestError{Code: -32603, Message: fmt.Sprintf("%s: %v", p.Path, err)}
	}
	return sdk.WriteTextFileResponse{}, nil
}

// errNoTerminal declines terminal/*: the adapter does not declare the
// terminal client capability, so a conforming agent never asks.
func errNoTerminal(method string) error {
	return &sdk.RequestError{Code: -32601, Message: method + ": this client offers no terminals (run commands with the agent's own tools)"}
}

func (c *client) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errNoTerminal("terminal/create")
}

func (c *client) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errNoTerminal("terminal/kill")
}

func (c *client) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errNoTerminal("terminal/output")
}

func (c *client) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errNoTerminal("terminal/release")
}

func (c *client) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errNoTerminal("terminal/wait_for_exit")
}

var _ sdk.Client = (*client)(nil)
