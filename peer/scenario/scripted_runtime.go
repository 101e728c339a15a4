package scenario

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentwire/agentwire/internal/peer/transcript"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/coder/websocket"

	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// Scripted Runtime mode, the mirror of scripted mode: the runner plays the
// Runtime's frames from a transcript against a real Core over a real
// WebSocket and compares the frames Core sends with the transcript. What
// Core owns beyond the wire (Turn status, journal, API answers) is asked of
// the CoreSide through directives the runner does not know.
//
// Directives:
//
//	connect [name=N] [device=D] [credential=C] [version=V] [omit=device_id|version|bearer]
//	                        dial Core's upgrade; prints "connected" or "http: STATUS CODE"
//	heartbeat [kind=K] [available=false] [unsupported=a,b] [omit=field]
//	                        a declaration built from the wiretest fixture (omit makes it invalid)
//	send type=T [id=ID]     input: the payload; $name placeholders are substituted
//	     [settle=false]     do not wait for Core to apply it (for a Core whose store is held)
//	disconnect              the Runtime drops the socket (going away)
//	read                    nothing is done; the frames Core sends meanwhile are read
//	silence                 Core sends nothing within the silence window
//	anything else           CoreSide.Do (submit a Turn, read its status, cancel, advance Core's clock, ...)
//
// Every directive but connect takes conn=N (default: the latest
// connection). Expected lines that start with "core: " are the frames Core
// sent on that connection, "core: TYPE ID PAYLOAD" with sorted keys, or
// "core: closed CODE REASON" when Core closed it; other lines are what the
// directive printed. Values Core generates (request, Run and delivery IDs)
// are written as $name placeholders: the first line that carries one binds
// it, later lines are printed with the name, and sent frames get the value.

// CoreSide is the real Core of a scripted-Runtime run.
type CoreSide interface {
	// URL is Core's base URL (http://host:port).
	URL() string
	// Credential returns the secret the transcript calls name (device,
	// project, admin, revoked, ...); "" for an unknown name.
	Credential(name string) string
	// Settle returns once Core has applied at least frames frames of the
	// device's current connection, or that connection has ended.
	Settle(t *testing.T, device string, frames int)
	// Do runs a Core-side directive and returns what it prints.
	Do(t *testing.T, d *datadriven.TestData, b *Bindings) (string, error)
}

// ScriptedRuntimeOptions configure a scripted-Runtime run.
type ScriptedRuntimeOptions struct {
	Core CoreSide
	// Silence is how long "silence" and a directive expecting no frame
	// listen (50 ms by default).
	Silence time.Duration
}

// Bindings are a run's $name placeholders and the values bound to them.
type Bindings struct{ m map[string]string }

// Bind binds name (with its $) to value unless it is bound.
func (b *Bindings) Bind(name, value string) {
	if _, ok := b.m[name]; !ok && strings.HasPrefix(name, "$") && value != "" {
		b.m[name] = value
	}
}

// Value returns the value bound to name.
func (b *Bindings) Value(name string) (string, bool) {
	v, ok := b.m[name]
	return v, ok
}

// names lists the bound names, longest first, so that $run never replaces
// the front of $run2.
func (b *Bindings) names() []string {
	out := make([]string, 0, len(b.m))
	for n := range b.m {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

// Resolve substitutes every bound $name in s with its value.
func (b *Bindings) Resolve(s string) string {
	for _, n := range b.names() {
		s = strings.ReplaceAll(s, n, b.m[n])
	}
	return s
}

// Render writes every bound value in line as its name.
func (b *Bindings) Render(line string) string {
	vals := make([]string, 0, len(b.m))
	byVal := map[string]string{}
	for n, v := range b.m {
		// Of several names bound to one value, the first in order.
		if old, ok := byVal[v]; !ok || n < old {
			if !ok {
				vals = append(vals, v)
			}
			byVal[v] = n
		}
	}
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	for _, v := range vals {
		line = strings.ReplaceAll(line, v, byVal[v])
	}
	return line
}

// learn binds the unbound placeholders of an expected line to the actual
// line's values at the same places: word by word before the JSON part,
// then member by member within it.
func (b *Bindings) learn(expected, actual string) {
	eh, ej := splitJSON(expected)
	ah, aj := splitJSON(actual)
	ew, aw := strings.Fields(eh), strings.Fields(ah)
	for i, w := range ew {
		if i < len(aw) {
			b.Bind(w, aw[i])
		}
	}
	var e, a any
	if json.Unmarshal([]byte(ej), &e) == nil && json.Unmarshal([]byte(aj), &a) == nil {
		b.learnJSON(e, a)
	}
}

func (b *Bindings) learnJSON(e, a any) {
	switch x := e.(type) {
	case string:
		if s, ok := a.(string); ok {
			b.Bind(x, s)
		}
	case map[string]any:
		m, _ := a.(map[string]any)
		for k, v := range x {
			b.learnJSON(v, m[k])
		}
	case []any:
		l, _ := a.([]any)
		for i, v := range x {
			if i < len(l) {
				b.learnJSON(v, l[i])
			}
		}
	}
}

func splitJSON(line string) (string, string) {
	if i := strings.IndexAny(line, "{["); i >= 0 {
		return line[:i], line[i:]
	}
	return line, ""
}

// coreConn is one WebSocket the scripted Runtime opened.
type coreConn struct {
	device string
	ws     *websocket.Conn
	frames chan string     // rendered frames, then the close line
	done   <-chan struct{} // closed at the end of the run: the reader stops
	sent   int
}

type scriptedRuntime struct {
	t     *testing.T
	opts  ScriptedRuntimeOptions
	b     *Bindings
	conns map[string]*coreConn
	last  string
	done  <-chan struct{}
}

// RunScriptedRuntime runs the transcript at path as a scripted Runtime
// against the real Core opts.Core serves.
func RunScriptedRuntime(t *testing.T, path string, opts ScriptedRuntimeOptions) {
	s, end := newScriptedRuntime(t, opts)
	defer end()
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		out, err := s.do(t, d)
		if err != nil {
			return out + "error: " + err.Error() + "\n"
		}
		return out
	})
}

// newScriptedRuntime is a scripted Runtime with no connection yet; end
// stops its readers and closes what it opened.
func newScriptedRuntime(t *testing.T, opts ScriptedRuntimeOptions) (*scriptedRuntime, func()) {
	if opts.Silence == 0 {
		opts.Silence = 50 * time.Millisecond
	}
	s := &scriptedRuntime{t: t, opts: opts, b: &Bindings{m: map[string]string{}}, conns: map[string]*coreConn{}}
	done := make(chan struct{})
	s.done = done
	return s, func() {
		close(done)
		for _, c := range s.conns {
			_ = c.ws.CloseNow()
		}
	}
}

func (s *scriptedRuntime) conn(d *datadriven.TestData) (*coreConn, error) {
	name := transcript.Arg(d, "conn")
	if name == "" {
		name = s.last
	}
	c := s.conns[name]
	if c == nil {
		return nil, fmt.Errorf("no connection %q (connect first)", name)
	}
	return c, nil
}

func (s *scriptedRuntime) do(t *testing.T, d *datadriven.TestData) (string, error) {
	var printed string
	switch d.Cmd {
	case "connect":
		out, err := s.connect(d)
		if err != nil || out != "connected\n" {
			return out, err
		}
		printed = out
	case "heartbeat":
		payload, err := heartbeatPayload(d)
		if err != nil {
			return "", err
		}
		if err := s.write(t, d, "heartbeat", "", payload); err != nil {
			return "", err
		}
	case "send":
		input := strings.TrimSpace(d.Input)
		if input == "" {
			input = "{}"
		}
		if err := s.write(t, d, transcript.Arg(d, "type"), s.b.Resolve(transcript.Arg(d, "id")), s.b.Resolve(input)); err != nil {
			return "", err
		}
	case "disconnect":
		c, err := s.conn(d)
		if err != nil {
			return "", err
		}
		_ = c.ws.Close(websocket.StatusGoingAway, "scenario disconnect")
		// What Core sent before the close is still printed; the echo of
		// the Runtime's own close is not.
		var out strings.Builder
		for line := range c.frames {
			if !strings.HasPrefix(line, "core: closed ") {
				out.WriteString(s.b.Render(line) + "\n")
			}
		}
		for name, x := range s.conns {
			if x == c {
				delete(s.conns, name)
			}
		}
		return out.String(), nil
	case "read", "silence":
	default:
		out, err := s.opts.Core.Do(t, d, s.b)
		if err != nil {
			return out, err
		}
		printed = s.bindPrinted(d, out)
	}
	c, err := s.conn(d)
	if err != nil {
		if d.Cmd == "read" || d.Cmd == "silence" {
			return printed, err
		}
		return printed, nil // a Core directive before any connection
	}
	return printed + s.expect(d, c), nil
}

// bindPrinted binds the placeholders of the expected lines a Core
// directive printed (those not starting with "core: ", in order) and
// renders the printed lines with the bound names.
func (s *scriptedRuntime) bindPrinted(d *datadriven.TestData, out string) string {
	var want []string
	for _, l := range nonEmptyLines(d.Expected) {
		if !strings.HasPrefix(l, "core: ") {
			want = append(want, l)
		}
	}
	var b strings.Builder
	for i, l := range nonEmptyLines(out) {
		if i < len(want) {
			s.b.learn(want[i], l)
		}
		b.WriteString(s.b.Render(l) + "\n")
	}
	return b.String()
}

// connect dials the upgrade with the directive's parameters.
func (s *scriptedRuntime) connect(d *datadriven.TestData) (string, error) {
	name, device, cred, version := transcript.Arg(d, "name"), transcript.Arg(d, "device"), transcript.Arg(d, "credential"), transcript.Arg(d, "version")
	if device == "" {
		device = "dev-1"
	}
	if cred == "" {
		cred = "device"
	}
	if version == "" {
		version = wire.Version
	}
	omit := map[string]bool{}
	for _, o := range strings.Split(transcript.Arg(d, "omit"), ",") {
		omit[o] = true
	}
	secret := s.opts.Core.Credential(cred)
	if secret == "" && !omit["bearer"] {
		return "", fmt.Errorf("credential=%s: the Core side has no such credential", cred)
	}
	q := []string{}
	if !omit["device_id"] {
		q = append(q, "device_id="+device)
	}
	if !omit["version"] {
		q = append(q, "version="+version)
	}
	h := http.Header{}
	if !omit["bearer"] {
		h.Set("Authorization", "Bearer "+secret)
	}
	url := "ws" + strings.TrimPrefix(s.opts.Core.URL(), "http") + "/api/v1/agent-daemon/ws?" + strings.Join(q, "&")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		if resp == nil {
			return "", err
		}
		var body struct {
			Error string `json:"error"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		_ = resp.Body.Close()
		return fmt.Sprintf("http: %d %s\n", resp.StatusCode, body.Error), nil
	}
	ws.SetReadLimit(4 << 20)
	if name == "" {
		name = fmt.Sprintf("conn%d", len(s.conns)+1)
	}
	if old := s.conns[name]; old != nil {
		_ = old.ws.CloseNow()
	}
	c := &coreConn{device: device, ws: ws, frames: make(chan string, 256), done: s.done}
	s.conns[name], s.last = c, name
	go c.read()
	return "connected\n", nil
}

// read renders every frame Core sends, then how the connection closed.
func (c *coreConn) read() {
	defer close(c.frames)
	put := func(line string) bool {
		select {
		case c.frames <- line:
			return true
		case <-c.done:
			return false
		}
	}
	for {
		_, b, err := c.ws.Read(context.Background())
		if err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				put(fmt.Sprintf("core: closed %d %s", ce.Code, ce.Reason))
			} else {
				put("core: closed (no close frame)")
			}
			return
		}
		if !put(renderFrame(b)) {
			return
		}
	}
}

func renderFrame(b []byte) string {
	var env struct {
		Type    string          `json:"type"`
		ID      string          `json:"id"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return "core: (not JSON) " + string(b)
	}
	var v any
	_ = json.Unmarshal(env.Payload, &v)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // maps encode with sorted keys
	return fmt.Sprintf("core: %s %s %s", env.Type, orDash(env.ID), strings.TrimSpace(buf.String()))
}

// write sends one frame on the directive's connection and waits until Core
// has applied it.
func (s *scriptedRuntime) write(t *testing.T, d *datadriven.TestData, typ, id, payload string) error {
	c, err := s.conn(d)
	if err != nil {
		return err
	}
	idJSON, _ := json.Marshal(id)
	frame := `{"type":"` + typ + `","id":` + string(idJSON) + `,"payload":` + payload + `}`
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		return err
	}
	c.sent++
	if transcript.Arg(d, "settle") != "false" {
		s.opts.Core.Settle(t, c.device, c.sent)
	}
	return nil
}

// expect reads as many frames as the transcript expects of Core, binding
// placeholders; with none expected (or for silence) it listens for the
// silence window and prints whatever arrives.
func (s *scriptedRuntime) expect(d *datadriven.TestData, c *coreConn) string {
	var want []string
	for _, l := range nonEmptyLines(d.Expected) {
		if strings.HasPrefix(l, "core: ") {
			want = append(want, l)
		}
	}
	var out strings.Builder
	for _, w := range want {
		line, ok := next(c.frames, 10*time.Second)
		if !ok {
			out.WriteString("(no frame)\n")
			return out.String()
		}
		s.b.learn(w, line)
		out.WriteString(s.b.Render(line) + "\n")
	}
	if d.Cmd == "silence" || len(want) == 0 {
		for {
			line, ok := next(c.frames, s.opts.Silence)
			if !ok {
				break
			}
			out.WriteString(s.b.Render(line) + "\n")
		}
	}
	return out.String()
}

func next(frames chan string, wait time.Duration) (string, bool) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case l, ok := <-frames:
		return l, ok
	case <-timer.C:
		return "", false
	}
}

// heartbeatPayload builds a heartbeat declaring one kind with the
// wiretest fixture's capabilities; omit drops a capability field, which
// makes the declaration invalid.
func heartbeatPayload(d *datadriven.TestData) (string, error) {
	kind := transcript.Arg(d, "kind")
	if kind == "" {
		kind = "script"
	}
	var opts []wiretest.Option
	if u := transcript.Arg(d, "unsupported"); u != "" {
		opts = append(opts, wiretest.Unsupports(strings.Split(u, ",")...))
	}
	caps, err := json.Marshal(wiretest.Capabilities(opts...))
	if err != nil {
		return "", err
	}
	var m map[string]any
	if err := json.Unmarshal(caps, &m); err != nil {
		return "", err
	}
	if o := transcript.Arg(d, "omit"); o != "" {
		if _, ok := m[o]; !ok {
			return "", fmt.Errorf("omit=%s: no such capability", o)
		}
		delete(m, o)
	}
	hb := map[string]any{"ts": 1_800_000_000, "active_requests": 0, "supported_agent_kinds": []any{
		map[string]any{"kind": kind, "available": transcript.Arg(d, "available") != "false", "capabilities": m},
	}}
	b, err := json.Marshal(hb)
	return string(b), err
}
