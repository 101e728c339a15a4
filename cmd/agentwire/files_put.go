package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
)

const filesPutUsage = `usage: agentwire files put --core URL --session S PATH FILE   (FILE - reads stdin; at most 5 MiB)
       agentwire files write --core URL MUTATION_ID              (a write's durable record)
       agentwire files resolve --core URL --resolution applied|not_applied [--note TEXT] MUTATION_ID
                 (an operator, with the administration key, resolves a write whose outcome is unknown)
put exits 0 only when the write completed; an unknown outcome blocks the Session's writes and
Turns until it is resolved.`

// maxPutBody is the public inline bound (daemon-protocol.txt:185); the CLI
// refuses a larger file before sending anything.
const maxPutBody = 5 << 20

// progressMin is the body size from which put draws a progress bar on a
// terminal.
const progressMin = 256 << 10

func runFilesWrite(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("files "+args[0], stderr)
	core := fs.String("core", "", "Core's base URL (default $AGENTWIRE_CORE)")
	session := fs.String("session", "", "Session ID (put)")
	resolution := fs.String("resolution", "", "resolve: applied or not_applied")
	note := fs.String("note", "", "resolve: what the operator checked")
	want := map[string]int{"put": 2, "write": 1, "resolve": 1}[args[0]]
	if err := parseFlags(fs, args[1:]); err != nil || fs.NArg() != want {
		fmt.Fprintln(stderr, filesPutUsage)
		return errUsage
	}
	c, err := newAPIClient(*core)
	if err != nil {
		return err
	}
	switch args[0] {
	case "write":
		return c.call("GET", "/api/v1/writes/"+url.PathEscape(fs.Arg(0)), nil, stdout)
	case "resolve":
		if *resolution != "applied" && *resolution != "not_applied" {
			return errors.New("--resolution must be applied or not_applied")
		}
		return c.call("POST", "/api/v1/writes/"+url.PathEscape(fs.Arg(0))+"/resolve", map[string]string{"resolution": *resolution, "note": *note}, stdout)
	}
	if *session == "" {
		return errors.New("--session is required")
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
