package scenario

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/agentwire/agentwire/internal/peer/transcript"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/coder/websocket"
)

// Scripted mode: the runner plays Core's frames from a transcript against a
// real Runtime over a real WebSocket, reads the frames the Runtime sends
// and compares them with the transcript. Neither side imports the other's
// implementation (daemon-protocol.txt:194).
//
// Directives:
//
//	start                          input: the peer's setup (passed to Start); the peer connects
//	send type=T [id=ID]            input: the payload; $name placeholders are substituted, and
//	                               "$fill(N,c)" becomes the base64 of N bytes c (a large chunk)
//	raw                            input: one frame sent exactly as written (malformed input)
//	disconnect                     Core drops the socket (going away)
//	reconnect                      wait for the peer's next connection
//	close code=N                   Core closes the socket with code N
//	silence                        the peer sends nothing within the silence window
//	advance by=D                   the peer's clock moves forward by D (a Go duration), firing its due timers
//	refuse at=S status=N [error=C] from now on Core answers step S (bootstrap or upgrade) with HTTP status N
//	                               and the body {"error":C}; a start or reconnect then expects the refusal,
//	                               written "core: refused S N C", and silence reports any later attempt
//	exit                           the peer ends by itself; written "runtime: exited: MESSAGE"
//
// An expected line written "~runtime: …" is floating: it must be sent, but
// anywhere among the directive's frames (see splitFloating).
//
// The expected output of a directive is the frames the peer sent after it,
// one per line: "runtime: TYPE ID PAYLOAD" with the payload as JSON with
// sorted keys; heartbeats are written "runtime: heartbeat" and are only
// expected where a directive names them (start, reconnect). A value the
// Runtime generates is written as a "$name" placeholder: the first frame
// that carries it binds it, later lines must repeat the bound value, and
// Core's frames get it substituted. A value in one of the Generated fields
// that no expected line names yet (a new directive recorded with -rewrite)
// is bound too, to the field's placeholder ($handle, then $handle2, …),
// unless Core sent it first; so a rewrite records placeholders, never the
// values of one run.

// ScriptedOptions configure a scripted run.
type ScriptedOptions struct {
	// Start makes the real peer connect to coreURL (bootstrap and the
	// WebSocket are served there), configured by setup; it returns a stop
	// function that ends the peer and waits for it.
	Start func(t *testing.T, coreURL, setup string) (stop func())
	// Advance moves the peer's clock forward by d (the "advance"
	// directive). It must first let the peer apply what it already sent,
	// so that a deadline armed by a frame Core has read is due. Nil refuses
	// the directive.
	Advance func(t *testing.T, d time.Duration)
	// Silence is how long "silence" listens (50 ms by default, the
	// reference's window); it can only let a stray frame pass, never flake.
	Silence time.Duration
	// Generated maps the payload fields whose values the Runtime generates
	// to their placeholder names; nil takes DefaultGenerated.
	Generated map[string]string
	// Ended waits up to within for the peer started by Start to end by
	// itself and returns what it ended with (the "exit" directive); nil
	// refuses the directive.
	Ended func(t *testing.T, within time.Duration) (result string, ok bool)
}

// DefaultGenerated are the Runtime-generated fields of the reference's
// wire scenarios (wire-reference §6): Executor ID, admission handle and
// expiry.
var DefaultGenerated = map[string]string{"executor_id": "$executor", "handle": "$handle", "expires_at": "$expires_at"}

// Paths a scripted Core serves.
const (
	scriptedBootstrap = "/api/v1/agent-daemon/bootstrap"
	scriptedWS        = "/api/v1/agent-daemon/ws"
)

type scripted struct {
	t        *testing.T
	opts     ScriptedOptions
	srv      *httptest.Server
	accepted chan *websocket.Conn
	ws       *websocket.Conn
	frames   chan []byte
	stop     func()
	bind     map[string]string // $name → JSON text of the bound value
	sent     map[string]bool   // JSON text of every scalar value Core sent

	mu      sync.Mutex
	refusal map[string]refusal // by step (bootstrap, upgrade)
	refused chan string        // a line for each refused request
}

// refusal is how Core answers one step: an HTTP status and error code.
type refusal struct {
	status int
	code   string
}

// refuses answers r with the refusal armed for step, if any.
func (s *scripted) refuses(step string, w http.ResponseWriter) bool {
	s.mu.Lock()
	rf, ok := s.refusal[step]
	s.mu.Unlock()
	if !ok {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rf.status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": rf.code, "detail": "scenario"})
	select {
	case s.refused <- strings.TrimSpace(fmt.Sprintf("core: refused %s %d %s", step, rf.status, rf.code)):
	default: // a peer retrying in a loop; the transcript already shows it
	}
	return true
}

// RunScripted runs the transcript at path against the real peer Start starts.
func RunScripted(t *testing.T, path string, opts ScriptedOptions) {
	s := newScripted(t, opts)
	defer s.close()
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		out, err := s.do(d)
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		return out
	})
}

// newScripted serves a scripted Core's bootstrap and WebSocket on
// loopback; close ends the connection, the peer and the server.
func newScripted(t *testing.T, opts ScriptedOptions) *scripted {
	if opts.Silence == 0 {
		opts.Silence = 50 * time.Millisecond
	}
	if opts.Generated == nil {
		opts.Generated = DefaultGenerated
	}
	s := &scripted{t: t, opts: opts, accepted: make(chan *websocket.Conn, 4), bind: map[string]string{}, sent: map[string]bool{},
		refusal: map[string]refusal{}, refused: make(chan string, 64)}
	mux := http.NewServeMux()
	mux.HandleFunc(scriptedBootstrap, func(w http.ResponseWriter, r *http.Request) {
		if s.refuses("bootstrap", w) {
			return
		}
		// decision: an interval far beyond the test keeps periodic
		// heartbeats out of the transcript; the first one is asserted.
		_ = json.NewEncoder(w).Encode(map[string]any{"ws_url": "ws://" + r.Host + scriptedWS, "heartbeat_seconds": 3600})
	})
	mux.HandleFunc(scriptedWS, func(w http.ResponseWriter, r *http.Request) {
		if s.refuses("upgrade", w) {
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		s.accepted <- c
	})
	s.srv = httptest.NewServer(mux)
	return s
}

func (s *scripted) close() {
	if s.ws != nil {
		_ = s.ws.CloseNow()
	}
	if s.stop != nil {
		s.stop()
	}
	s.srv.Close()
}

func (s *scripted) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

func (s *scripted) do(d *datadriven.TestData) (string, error) {
	switch d.Cmd {
	case "start", "reconnect":
		if d.Cmd == "start" {
			s.stop = s.opts.Start(s.t, s.srv.URL, d.Input)
		}
		refused, err := s.accept()
		if err != nil {
			return "", err
		}
		if refused != "" {
			return refused + "\n", nil
		}
	case "refuse":
		var status int
		if _, err := fmt.Sscan(transcript.Arg(d, "status"), &status); err != nil || status < 400 || status > 599 {
			return "", fmt.Errorf("refuse status=%q: want an HTTP error status", transcript.Arg(d, "status"))
		}
		step := transcript.Arg(d, "at")
		if step != "bootstrap" && step != "upgrade" {
			return "", fmt.Errorf("refuse at=%q: want bootstrap or upgrade", step)
		}
		s.mu.Lock()
		s.refusal[step] = refusal{status: status, code: transcript.Arg(d, "error")}
		s.mu.Unlock()
		return "", nil
	case "exit":
		if s.opts.Ended == nil {
			return "", fmt.Errorf("exit: this peer cannot report its end")
		}
		res, ok := s.opts.Ended(s.t, 10*time.Second)
		if !ok {
			return "runtime: (still running)\n", nil
		}
		return "runtime: exited: " + res + "\n", nil
	case "send":
		if err := s.send(d); err != nil {
			return "", err
		}
	case "raw":
		ctx, cancel := s.ctx()
		err := s.ws.Write(ctx, websocket.MessageText, []byte(strings.TrimSpace(d.Input)))
		cancel()
		if err != nil {
			return "", err
		}
	case "disconnect", "close":
		code := websocket.StatusGoingAway
		if c := transcript.Arg(d, "code"); c != "" {
			var n int
			if _, err := fmt.Sscan(c, &n); err != nil {
				return "", fmt.Errorf("close code=%s: %w", c, err)
			}
			code = websocket.StatusCode(n)
		}
		if s.ws == nil {
			return "", fmt.Errorf("%s: no connection is open", d.Cmd)
		}
		_ = s.ws.Close(code, "scenario")
		s.ws = nil
		return "", nil
	case "advance":
		by, err := time.ParseDuration(transcript.Arg(d, "by"))
		if err != nil || by <= 0 {
			return "", fmt.Errorf("advance by=%q: want a positive Go duration", transcript.Arg(d, "by"))
		}
		if s.opts.Advance == nil {
			return "", fmt.Errorf("advance: this peer's clock cannot be moved")
		}
		s.opts.Advance(s.t, by)
	case "silence":
	default:
		return "", fmt.Errorf("unknown directive %q", d.Cmd)
	}
	return s.expect(d)
}

// accept waits for the peer's next connection and starts reading it, or
// for a refused request (returned as its transcript line).
func (s *scripted) accept() (string, error) {
	select {
	case c := <-s.accepted:
		s.ws = c
		s.frames = make(chan []byte, 64)
		go func(c *websocket.Conn, out chan []byte) {
			defer close(out)
			for {
				_, b, err := c.Read(context.Background())
				if err != nil {
					return
				}
				out <- b
			}
		}(c, s.frames)
		return "", nil
	case line := <-s.refused:
		return line, nil
	case <-time.After(10 * time.Second):
		return "", fmt.Errorf("the peer did not connect")
	}
}

func (s *scripted) send(d *datadriven.TestData) error {
	payload := strings.TrimSpace(d.Input)
	if payload == "" {
		payload = "{}"
	}
	for name, v := range s.bind {
		payload = strings.ReplaceAll(payload, `"`+name+`"`, v)
	}
	var v any
	if json.Unmarshal([]byte(payload), &v) == nil {
		s.remember(v)
	}
	payload, err := fill(payload)
	if err != nil {
		return err
	}
	id, _ := json.Marshal(transcript.Arg(d, "id"))
	frame := `{"type":"` + transcript.Arg(d, "type") + `","id":` + string(id) + `,"payload":` + payload + `}`
	ctx, cancel := s.ctx()
	defer cancel()
	return s.ws.Write(ctx, websocket.MessageText, []byte(frame))
}

// expect reads as many frames as the transcript expects (heartbeats only
// where expected), then, for silence, listens for the window.
func (s *scripted) expect(d *datadriven.TestData) (string, error) {
	want, floating := splitFloating(nonEmptyLines(d.Expected))
	var out strings.Builder
	found := make([]string, 0, len(want))
	used := make([]bool, len(want))
	for n := 0; n < len(want); n++ {
		b, ok := s.next(10*time.Second, strings.TrimSpace(want[n]) == "runtime: heartbeat")
		if !ok {
			out.WriteString(strings.Join(found, ""))
			out.WriteString("(no frame)\n")
			return out.String(), nil
		}
		found = append(found, s.render(b, want[pairFor(b, want, used, n)])+"\n")
	}
	out.WriteString(settleFloating(found, want, floating))
	if d.Cmd == "silence" || len(want) == 0 {
		for {
			b, ok := s.next(s.opts.Silence, false)
			if !ok {
				break
			}
			out.WriteString(s.render(b, "") + "\n")
		}
	}
	if d.Cmd == "silence" {
		// A refused peer that tries again shows here.
		for {
			select {
			case line := <-s.refused:
				out.WriteString(line + "\n")
				continue
			default:
			}
			break
		}
	}
	return out.String(), nil
}

// next returns the next frame, skipping heartbeats unless one is wanted.
func (s *scripted) next(wait time.Duration, heartbeat bool) ([]byte, bool) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case b, ok := <-s.frames:
			if !ok {
				return nil, false
			}
			if !heartbeat && bytes.Contains(b, []byte(`"type":"heartbeat"`)) {
				continue
			}
			return b, true
		case <-timer.C:
			return nil, false
		}
	}
}

// render writes a frame as a transcript line, binding the placeholders of
// the expected line and writing bound values back as their names.
func (s *scripted) render(b []byte, want string) string {
	var env struct {
		Type    string          `json:"type"`
		ID      string          `json:"id"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return "runtime: (not JSON) " + string(b)
	}
	if env.Type == "heartbeat" {
		return "runtime: heartbeat"
	}
	var actual any
	_ = json.Unmarshal(env.Payload, &actual)
	if parts := strings.SplitN(strings.TrimSpace(want), " ", 4); len(parts) == 4 {
		var expected any
		if json.Unmarshal([]byte(parts[3]), &expected) == nil {
			s.match(expected, actual)
		}
	}
	s.autobind(actual)
	return fmt.Sprintf("runtime: %s %s %s", env.Type, orDash(env.ID), s.canonical(actual))
}

// match binds every unbound placeholder of expected to actual's value there.
func (s *scripted) match(expected, actual any) {
	switch e := expected.(type) {
	case string:
		if strings.HasPrefix(e, "$") {
			if _, bound := s.bind[e]; !bound && actual != nil {
				v, _ := json.Marshal(actual)
				s.bind[e] = string(v)
			}
		}
	case map[string]any:
		a, _ := actual.(map[string]any)
		for k, v := range e {
			s.match(v, a[k])
		}
	case []any:
		a, _ := actual.([]any)
		for i, v := range e {
			if i < len(a) {
				s.match(v, a[i])
			}
		}
	}
}

// remember records the scalar values of a frame Core sent: a field the
// Runtime echoes from it is not a generated value.
func (s *scripted) remember(v any) {
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			s.remember(e)
		}
	case []any:
		for _, e := range x {
			s.remember(e)
		}
	default:
		b, _ := json.Marshal(x)
		s.sent[string(b)] = true
	}
}

// autobind binds the values of Generated fields in actual that are not
// bound yet and that Core did not send, to the field's next free name.
func (s *scripted) autobind(actual any) {
	switch x := actual.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // names are handed out in a stable order
		for _, k := range keys {
			s.autobind(x[k])
			base, ok := s.opts.Generated[k]
			if !ok || x[k] == nil || x[k] == "" {
				continue
			}
			b, _ := json.Marshal(x[k])
			if s.sent[string(b)] || s.boundName(string(b)) != "" {
				continue
			}
			name := base
			for n := 2; ; n++ {
				if _, taken := s.bind[name]; !taken {
					break
				}
				name = fmt.Sprintf("%s%d", base, n)
			}
			s.bind[name] = string(b)
		}
	case []any:
		for _, e := range x {
			s.autobind(e)
		}
	}
}

// boundName is the name bound to v; of several, the first in order, so
// that a rendering never depends on map order.
func (s *scripted) boundName(v string) string {
	found := ""
	for name, bound := range s.bind {
		if bound == v && (found == "" || name < found) {
			found = name
		}
	}
	return found
}

// canonical is v as JSON with sorted keys and bound values as their names.
func (s *scripted) canonical(v any) string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			kb, _ := json.Marshal(k)
			parts[i] = string(kb) + ":" + s.canonical(x[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = s.canonical(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	b, _ := json.Marshal(v)
	if name := s.boundName(string(b)); name != "" {
		nb, _ := json.Marshal(name)
		return string(nb)
	}
	return string(b)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// fillToken matches "$fill(N,c)": N bytes c, base64-encoded, so that a
// transcript can send a chunk larger than a line should be.
var fillToken = regexp.MustCompile(`"\$fill\((\d{1,8}),(.)\)"`)

func fill(payload string) (string, error) {
	var err error
	out := fillToken.ReplaceAllStringFunc(payload, func(m string) string {
		g := fillToken.FindStringSubmatch(m)
		n, cerr := strconv.Atoi(g[1])
		if cerr != nil || n > 8<<20 {
			err = fmt.Errorf("%s: at most 8 MiB", m)
			return m
		}
		return `"` + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte(g[2]), n)) + `"`
	})
	return out, err
}

// splitFloating strips the "~" that marks an expected line as floating: a
// frame of another lifecycle that the peer sends concurrently with the
// others (a decision's receipt and the Run's next events), so the
// protocol fixes no order between them (daemon-protocol.txt:144). The
// other lines keep their order.
func splitFloating(lines []string) (want []string, floating []bool) {
	for _, l := range lines {
		t := strings.TrimSpace(l)
		f := strings.HasPrefix(t, "~")
		if f {
			t = strings.TrimSpace(strings.TrimPrefix(t, "~"))
		}
		want = append(want, t)
		floating = append(floating, f)
	}
	return want, floating
}

// pairFor picks the expected line a frame is rendered against (for its
// placeholders): the first unused one with the frame's type and ID, else
// the n-th.
func pairFor(b []byte, want []string, used []bool, n int) int {
	var env struct{ Type, ID string }
	if json.Unmarshal(b, &env) == nil {
		head := "runtime: " + env.Type + " " + orDash(env.ID) + " "
		for i, w := range want {
			if !used[i] && strings.HasPrefix(w, head) {
				used[i] = true
				return i
			}
		}
	}
	return n
}

// settleFloating writes the frames found. When they equal the expected
// lines with every floating line moved to where the peer sent it, the
// expected order (and its "~" marks) is written, so the transcript
// matches; otherwise the frames are written as they came.
func settleFloating(found, want []string, floating []bool) string {
	var fixed, loose []string
	for i, w := range want {
		if floating[i] {
			loose = append(loose, w+"\n")
		} else {
			fixed = append(fixed, w+"\n")
		}
	}
	if len(loose) > 0 && len(found) == len(want) {
		rest := make([]string, 0, len(found))
		left := append([]string(nil), loose...)
		for _, f := range found {
			if i := slices.Index(left, f); i >= 0 {
				left = slices.Delete(left, i, i+1)
				continue
			}
			rest = append(rest, f)
		}
		if len(left) == 0 && slices.Equal(rest, fixed) {
			var b strings.Builder
			for i, w := range want {
				if floating[i] {
					b.WriteString("~")
				}
				b.WriteString(w + "\n")
			}
			return b.String()
		}
	}
	return strings.Join(found, "")
}
