package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

var filesWriteCommands = map[string]subcommand{
	"put": {use: "files put [flags] PATH FILE",
		about: "Writes FILE (- reads standard input; at most 5 MiB) to PATH in the Session's workspace, atomically,\n" +
			"and prints the write's record. Exit 0 only when the write completed; an unknown outcome blocks\n" +
			"the Session's writes and Turns until an operator resolves it (agentwire files resolve).",
		examples: []string{"agentwire files put --session SESSION notes.txt ./notes.txt", "echo hello | agentwire files put --session SESSION hello.txt -"}},
	"write": {use: "files write [flags] MUTATION_ID", about: "Prints a workspace write's durable record as JSON.",
		examples: []string{"agentwire files write MUTATION_ID"}},
	"resolve": {use: "files resolve [flags] MUTATION_ID",
		about: "Resolves a write whose outcome is unknown, after an operator checked the workspace; it needs\n" +
			"the administration key (AGENTWIRE_API_KEY).",
		examples: []string{"agentwire files resolve --resolution not_applied --note 'file absent' MUTATION_ID"}},
}

// maxPutBody is the public inline bound (daemon-protocol.txt:185); the CLI
// refuses a larger file before sending anything.
const maxPutBody = 5 << 20

// progressMin is the body size from which put draws a progress bar on a
// terminal.
const progressMin = 256 << 10

func runFilesWrite(args []string, stdout, stderr io.Writer) error {
	fs := filesWriteCommands[args[0]].flags(stderr)
	core := fs.String("core", "", "Core's base URL (default $AGENTWIRE_CORE)")
	session, resolution, note := new(string), new(string), new(string)
	switch args[0] {
	case "put":
		session = fs.String("session", "", "the Session whose workspace is written (required)")
	case "resolve":
		resolution = fs.String("resolution", "", "applied or not_applied (required)")
		note = fs.String("note", "", "what the operator checked")
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return flagsDone(err)
	}
	switch {
	case args[0] == "put" && fs.NArg() != 2:
		return usageError(fs, "want PATH and FILE, got %d arguments", fs.NArg())
	case args[0] != "put" && fs.NArg() != 1:
		return usageError(fs, "want one MUTATION_ID, got %d arguments", fs.NArg())
	case args[0] == "put" && *session == "":
		return usageError(fs, "--session is required")
	case args[0] == "resolve" && !oneOf(*resolution, "applied", "not_applied"):
		return usageError(fs, "--resolution must be applied or not_applied, got %q", *resolution)
	}
	c, err := newAPIClient(*core)
	if err != nil {
		return usageError(fs, "%v", err)
	}
	switch args[0] {
	case "write":
		return c.call("GET", "/api/v1/writes/"+url.PathEscape(fs.Arg(0)), nil, stdout)
	case "resolve":
		return c.call("POST", "/api/v1/writes/"+url.PathEscape(fs.Arg(0))+"/resolve", map[string]string{"resolution": *resolution, "note": *note}, stdout)
	}
	body, err := readPutBody(fs.Arg(1))
	if err != nil {
		return err
	}
	var bar *progressBar
	if len(body) >= progressMin && isTerminal(stderr) {
		bar = &progressBar{w: stderr, total: int64(len(body))}
	}
	path := "/api/v1/sessions/" + url.PathEscape(*session) + "/files/content?" + url.Values{"path": {fs.Arg(0)}}.Encode()
	status, raw, err := c.put(path, body, bar)
	if err != nil {
		return err
	}
	var rec struct {
		MutationID string `json:"mutation_id"`
		Outcome    string `json:"outcome"`
		ErrorCode  string `json:"error_code"`
		Reason     string `json:"reason"`
		Error      string `json:"error"`
	}
	_ = json.Unmarshal(raw, &rec)
	if rec.Outcome == "" && status/100 != 2 {
		return apiError("PUT", c.base+path, fmt.Sprintf("%d %s", status, http.StatusText(status)), status, raw)
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, raw, "", "  ") == nil {
		raw = append(pretty.Bytes(), '\n')
	}
	if rec.Outcome == "" {
		return fmt.Errorf("PUT %s: %d: %s", fs.Arg(0), status, strings.TrimSpace(string(raw)))
	}
	if _, err := stdout.Write(raw); err != nil {
		return err
	}
	switch rec.Outcome {
	case "completed":
		return nil
	case "unknown":
		return fmt.Errorf("write %s: outcome unknown: the file may or may not have been written; the Session's writes and Turns wait until an operator runs `agentwire files resolve`", rec.MutationID)
	}
	return fmt.Errorf("write %s: %s %s %s", rec.MutationID, rec.Outcome, rec.ErrorCode, rec.Reason)
}

func readPutBody(name string) ([]byte, error) {
	var r io.Reader
	if name == "-" {
		r = os.Stdin
	} else {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxPutBody+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxPutBody {
		return nil, fmt.Errorf("%s: over the 5 MiB bound of a public workspace write", name)
	}
	return b, nil
}

// put sends body and returns the status and the answer, whatever the
// status: a settled write's record comes with 409, 503 and 202 too.
func (c *apiClient) put(path string, body []byte, bar *progressBar) (int, []byte, error) {
	var rd io.Reader = bytes.NewReader(body)
	if bar != nil {
		rd = &countingReader{r: rd, bar: bar}
	}
	req, err := http.NewRequest("PUT", c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.ContentLength = int64(len(body))
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Content-Type", "application/octet-stream")
	// decision: the API answers once the write settled, which the Runtime
	// bounds at two minutes (spec/workspace_write.yaml upload_wait); the
	// client waits a little longer than that.
	hc := &http.Client{Timeout: 150 * time.Second}
	resp, err := hc.Do(req)
	if bar != nil {
		bar.finish()
	}
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b, err
}

// progressBar draws the bytes handed to Core on one terminal line.
type progressBar struct {
	mu    sync.Mutex
	w     io.Writer
	total int64
	sent  int64
	drawn int
}

func (p *progressBar) add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent += int64(n)
	pct := int(p.sent * 100 / p.total)
	if pct == p.drawn && p.sent < p.total {
		return
	}
	p.drawn = pct
	const width = 30
	fill := pct * width / 100
	fmt.Fprintf(p.w, "\r[%s%s] %3d%% %d/%d bytes", strings.Repeat("#", fill), strings.Repeat(".", width-fill), pct, p.sent, p.total)
	if p.sent >= p.total {
		fmt.Fprint(p.w, "  waiting for the Runtime's receipt…")
	}
}

func (p *progressBar) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w)
}

type countingReader struct {
	r   io.Reader
	bar *progressBar
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	if n > 0 {
		c.bar.add(n)
	}
	return n, err
}
