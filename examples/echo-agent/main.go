// Command echo-agent is a small agent for the exec adapter
// (docs/exec-adapter.md). It uses only the standard library: any program
// that reads and writes JSON lines can do the same.
//
// Without directives a Turn is a short conversation: the agent echoes the
// Turn's text as deltas, asks one permission question ("May I echo your
// next input?") and waits for Core's decision; approved, it takes one
// active input, accepts it, runs its "echo" tool on it (reported as a tool
// call with its observation) and echoes it; denied, it says so. Everything
// it says is streamed, so done's content is the deltas joined.
//
// A first text part whose lines start with "/" is a list of directives,
// one per line, that replaces the conversation (the rest of the input is
// the text):
//
//	/echo        stream the text, whitespace kept, a blank line between messages
//	/say TEXT    stream TEXT (the rest of the line, as written)
//	/ask         ask permission to echo the next input; denied ends the Turn
//	/tool TEXT   run the echo tool on TEXT (a tool call before and after) and stream " TEXT"
//	             (with no TEXT: run it on nothing and say nothing)
//	/await       take one active input: accept it, then /tool its text
//	/wait        wait until the Turn ends (it is cancelled)
//	/fail TEXT   report an error with TEXT; done follows
//
// With ECHO_AGENT_LOG set to a file, the agent appends one JSON line to it
// for each thing it really did (its start with the Turn's text, each
// active input it took, each decision it read, its done with what it
// said), each line written before the agent tells the adapter, so the log
// never misses something the adapter saw. With ECHO_AGENT_PACE_MS set, it
// waits that long before each delta, so a Turn lasts long enough for
// faults to hit it midway. The chaos checker
// (internal/chaos) compares it with what Core recorded.
//
// Two rules of the exec adapter it follows: every interaction ID is unique
// per Turn (it carries the Run ID), and done reports a native Session ID
// ("echo-" + the Session ID) that a later Turn of the Session resumes
// (strict resume of any other ID fails the Turn).
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"
)

type content struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

type message struct {
	Content []content `json:"content"`
}

// line is every line the adapter writes; only the members of its type are set.
type line struct {
	Type      string    `json:"type"`
	RunID     string    `json:"run_id"`
	SessionID string    `json:"session_id"`
	Input     []message `json:"input"`
	InputID   string    `json:"input_id"`
	RequestID string    `json:"request_id"`
	Approved  bool      `json:"approved"`
	// The input line's Turn options.
	AgentSessionID          string `json:"agent_session_id"`
	StrictResume            bool   `json:"strict_resume"`
	ObserveToolObservations bool   `json:"observe_tool_observations"`
}

// agent is one Turn.
type agent struct {
	in      *bufio.Scanner
	out     *json.Encoder
	first   line
	asks    int
	tools   int
	steers  []line // active inputs read while waiting for something else
	stopped bool   // stdin ended: the Turn is over
	said    strings.Builder
	failed  bool
	log     *actionLog
	pace    time.Duration
}

func main() {
	a := &agent{in: bufio.NewScanner(os.Stdin), out: json.NewEncoder(os.Stdout), log: openActionLog(os.Getenv("ECHO_AGENT_LOG"))}
	if ms, err := strconv.Atoi(os.Getenv("ECHO_AGENT_PACE_MS")); err == nil && ms > 0 {
		a.pace = time.Duration(ms) * time.Millisecond
	}
	a.in.Buffer(make([]byte, 64<<10), 4<<20)
	first, ok := a.next()
	if !ok || first.Type != "input" {
		fmt.Fprintln(os.Stderr, "echo-agent: the first line must be the input")
		os.Exit(2)
	}
	a.first = first
	a.log.write(map[string]any{"ev": "start", "run_id": first.RunID, "session_id": first.SessionID, "pid": os.Getpid(),
		"text": strings.Join(texts(first.Input), "\n\n")})
	done := map[string]any{}
	if first.SessionID != "" {
		native := "echo-" + first.SessionID
		if first.AgentSessionID != "" && first.AgentSessionID != native && first.StrictResume {
			// Strict resume of a native Session this agent never reported:
			// fail rather than start a new one (daemon-protocol.txt:60).
			a.send("error", map[string]any{"error": "echo-agent: no native Session " + first.AgentSessionID, "code": "resource_not_found"})
			a.failed = true
			a.finish(done)
			return
		}
		done["metadata"] = map[string]any{"agent_session_id": native}
	}
	directives, text := split(first.Input)
	if directives == nil {
		directives = []string{"/echo", "/ask", "/await"}
	}
	a.play(directives, text)
	// An active input the Turn did not take is refused, so its sender is
	// not left waiting for a verdict.
	for _, s := range a.steers {
		a.send("input_rejected", map[string]any{"input_id": s.InputID, "code": "rejected", "error": "echo-agent: the Turn took no more input"})
	}
	a.finish(done)
}

// finish logs the end of the Turn, then sends done: a done the adapter
// read is always in the log.
func (a *agent) finish(done map[string]any) {
	a.log.write(map[string]any{"ev": "done", "run_id": a.first.RunID, "stopped": a.stopped, "failed": a.failed, "content": a.said.String()})
	a.send("done", done)
}

// play runs the directives in order; it stops early when a question was
// denied or the Turn ended.
func (a *agent) play(directives []string, text []string) {
	for _, d := range directives {
		if a.stopped {
			return
		}
		word, rest, _ := strings.Cut(d, " ")
		switch word {
		case "/echo":
			for i, part := range text {
				if i > 0 {
					a.say("\n\n")
				}
				for _, w := range words(part) {
					a.say(w)
				}
			}
		case "/say":
			a.say(rest)
		case "/ask":
			if !a.ask() {
				a.say(" (not allowed)")
				return
			}
			a.say(" (allowed)")
		case "/tool":
			a.tool(rest)
		case "/await":
			a.await()
		case "/wait":
			for !a.stopped {
				if l, ok := a.next(); ok && l.Type == "prompt_steer" {
					a.steers = append(a.steers, l)
				}
			}
		case "/fail":
			a.send("error", map[string]any{"error": rest})
			a.failed = true
			return
		default:
			a.send("error", map[string]any{"error": "echo-agent: unknown directive " + word})
			a.failed = true
			return
		}
	}
}

// ask asks one permission question and waits for its decision.
func (a *agent) ask() bool {
	a.asks++
	// The interaction ID is unique per Turn (it carries the Run ID): Core
	// and the Runtime tell questions apart by it alone on a connection
	// (docs/exec-adapter.md).
	id := "echo-permission-" + a.first.RunID
	if a.asks > 1 {
		id = fmt.Sprintf("%s-%d", id, a.asks)
	}
	// Nothing is written between a question and its answer, so the order
	// of what Core sees does not depend on timing.
	a.send("permission_request", map[string]any{"request_id": id, "tool": "echo", "title": "May I echo your next input?"})
	for {
		l, ok := a.next()
		if !ok {
			return false
		}
		switch {
		case l.Type == "permission_decision" && l.RequestID == id:
			a.log.write(map[string]any{"ev": "decision", "run_id": a.first.RunID, "request_id": id, "approved": l.Approved})
			return l.Approved
		case l.Type == "prompt_steer":
			a.steers = append(a.steers, l)
		}
	}
}

// await takes one active input: it accepts it and runs the echo tool on it.
func (a *agent) await() {
	var s line
	if len(a.steers) > 0 {
		s, a.steers = a.steers[0], a.steers[1:]
	} else {
		for {
			l, ok := a.next()
			if !ok {
				return
			}
			if l.Type == "prompt_steer" {
				s = l
				break
			}
		}
	}
	a.log.write(map[string]any{"ev": "input", "run_id": a.first.RunID, "input_id": s.InputID, "text": strings.Join(texts(s.Input), "\n\n")})
	a.send("input_accepted", map[string]any{"input_id": s.InputID})
	a.tool(strings.Join(texts(s.Input), "\n\n"))
}

// tool runs the echo tool on said: a tool call before and after (with the
// observation when Core observes them), then says it (nothing when said is
// empty).
func (a *agent) tool(said string) {
	a.tools++
	id := fmt.Sprintf("echo-%s-%d", a.first.RunID, a.tools)
	before := map[string]any{"id": id, "name": "echo", "stage": "before", "args": map[string]any{"text": said}}
	after := map[string]any{"id": id, "name": "echo", "stage": "after", "args": map[string]any{"text": said}, "result": map[string]any{"text": said}}
	if a.first.ObserveToolObservations {
		before["observation"] = map[string]any{"kind": "function", "status": "in_progress", "name": "echo", "arguments": map[string]any{"text": said}}
		after["observation"] = map[string]any{"kind": "function", "status": "completed", "name": "echo", "arguments": map[string]any{"text": said},
			"output": said}
	}
	a.send("tool_call", before)
	a.send("tool_call", after)
	if said != "" {
		a.say(" " + said)
	}
}

func (a *agent) say(text string) {
	if text != "" {
		time.Sleep(a.pace)
		a.said.WriteString(text)
		a.send("delta", map[string]any{"delta": text})
	}
}

func (a *agent) send(typ string, payload any) {
	if err := a.out.Encode(map[string]any{"type": typ, "payload": payload}); err != nil {
		fmt.Fprintln(os.Stderr, "echo-agent: write:", err)
		os.Exit(1)
	}
}

// next reads the adapter's next line; false once stdin ended (the Turn is
// over: cancelled, or the daemon stops).
func (a *agent) next() (line, bool) {
	if a.stopped || !a.in.Scan() {
		a.stopped = true
		return line{}, false
	}
	var l line
	if err := json.Unmarshal(a.in.Bytes(), &l); err != nil {
		fmt.Fprintln(os.Stderr, "echo-agent: bad line:", err)
		os.Exit(2)
	}
	return l, true
}

// split takes the directives off the front of the first text part; the
// text is what remains, one string per message (its text parts joined).
func split(in []message) (directives []string, text []string) {
	text = texts(in)
	if len(text) == 0 || !strings.HasPrefix(text[0], "/") {
		return nil, text
	}
	lines := strings.Split(text[0], "\n")
	n := 0
	for n < len(lines) && strings.HasPrefix(lines[n], "/") {
		directives = append(directives, lines[n])
		n++
	}
	rest := strings.Join(lines[n:], "\n")
	if rest == "" {
		return directives, text[1:]
	}
	return directives, append([]string{rest}, text[1:]...)
}

// texts is the text of each message, its text parts joined in order.
func texts(in []message) []string {
	var out []string
	for _, m := range in {
		var b strings.Builder
		for _, c := range m.Content {
			if c.Type == "input_text" {
				b.WriteString(c.Text)
			}
		}
		if b.Len() > 0 {
			out = append(out, b.String())
		}
	}
	return out
}

// words cuts s after each run of whitespace, so the pieces join back to s.
func words(s string) []string {
	var out []string
	start := 0
	rs := []rune(s)
	for i := 1; i < len(rs); i++ {
		if unicode.IsSpace(rs[i-1]) && !unicode.IsSpace(rs[i]) {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	if start < len(rs) {
		out = append(out, string(rs[start:]))
	}
	return out
}

// actionLog appends the agent's actions to ECHO_AGENT_LOG; nil logs nothing.
type actionLog struct{ f *os.File }

func openActionLog(path string) *actionLog {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo-agent: log:", err)
		os.Exit(1)
	}
	return &actionLog{f: f}
}

// write appends one line in one write(2) with O_APPEND, so the lines of
// agents of concurrent Turns sharing the file never interleave. No fsync:
// a line written is in the file once write returns, whatever process is
// killed after; only a machine crash, which the chaos run does not cause,
// could lose it.
func (l *actionLog) write(rec map[string]any) {
	if l == nil {
		return
	}
	b, err := json.Marshal(rec)
	if err == nil {
		_, err = l.f.Write(append(b, '\n'))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo-agent: log:", err)
		os.Exit(1)
	}
}
