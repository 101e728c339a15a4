package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// runDemo starts a real Core and a real Runtime with the exec adapter and
// examples/echo-agent, runs one Turn through the public API (deltas, a
// permission question it approves, one active input, done), prints the
// frames Core exchanged with the Runtime and writes a Mermaid sequence
// diagram of them.
//
// decision: the transcript is Core's own record of the socket (`core
// serve --transcript FILE`, every frame as it was read or written), not
// a debug log the demo parses: frames never carry a credential
// (daemon-protocol.txt:13, the credential travels only in the upgrade's
// header), and the demo still redacts every secret it issued from all it
// prints or writes.
//
// With --harness codex the Runtime runs the real Codex CLI instead
// (demo_codex.go), against a scripted model endpoint in this process.
var demoCommand = subcommand{use: "demo [flags]",
	about: "Runs Core, a Runtime and one Turn end to end on this machine (deltas, a permission it approves,\n" +
		"one active input), prints the frames Core exchanged with the Runtime and writes transcript.txt\n" +
		"and sequence.mmd to --out.",
	examples: []string{"agentwire demo", "agentwire demo --harness codex   (after make harnesses)"}}

func runDemo(args []string, stdout, stderr io.Writer) error {
	fs := demoCommand.flags(stderr)
	out := fs.String("out", "", "directory for transcript.txt and sequence.mmd (default demo-out, demo-out/codex with --harness codex)")
	agent := fs.String("agent", "", "a built echo-agent (default: go build ./examples/echo-agent)")
	which := fs.String("harness", "echo", "the agent the Runtime runs: echo (examples/echo-agent through the exec adapter) codex or claude (the real Codex or Claude Code CLI that make harnesses installs, against a scripted model endpoint on 127.0.0.1)")
	if err := parseFlags(fs, args); err != nil {
		return flagsDone(err)
	}
	if fs.NArg() != 0 {
		return usageError(fs, "demo takes no arguments, got %q", fs.Args())
	}
	var cliBin string
	cli, real := realCLIs[*which]
	switch {
	case *which == "echo":
		if *out == "" {
			*out = "demo-out"
		}
	case real:
		if *agent != "" {
			return usageError(fs, "--agent is for --harness echo")
		}
		if *out == "" {
			*out = filepath.Join("demo-out", cli.kind)
		}
		// Checked before anything starts, so a missing CLI is one line.
		bin, err := cli.binary()
		if err != nil {
			return err
		}
		cliBin = bin
	default:
		return usageError(fs, "--harness %s: want echo, codex or claude", *which)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "agentwire-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithCancel(context.Background())
	d := &demo{ctx: ctx, self: self, tmp: tmp, stdout: stdout, red: &redactor{}}
	defer d.close()
	defer cancel()
	setup := func() (*demoHarness, error) { return d.echoHarness(*agent) }
	if real {
		setup = func() (*demoHarness, error) { return d.realHarness(cli, cliBin) }
	}
	return d.run(*out, setup)
}

type demo struct {
	ctx       context.Context // ends when the demo returns
	self, tmp string
	stdout    io.Writer
	mu        sync.Mutex // serializes say
	red       *redactor
	procs     []*exec.Cmd
	exited    []chan error
	closers   []func()   // run after the children stopped (the model endpoint)
	steps     []demoStep // what the demo did through the API, with times
	inputs    []string   // the input_outcome payloads seen
}

// demoHarness is what differs between the agents the demo can run.
type demoHarness struct {
	kind    string   // the Session's agent_kind
	flags   []string // the Runtime's --harness flags
	env     []string // added to the Runtime's environment (a provider key's variable)
	about   string   // how the Runtime was started, for the narration
	diagram string   // the Runtime's label in the sequence diagram
	prompt  string   // the Turn's input
	steer   string   // the active input
	// steerOn picks the Turn event after which the active input is sent
	// (once).
	steerOn func(event, payload string) bool
	steered func() // called once the active input was posted (nil: nothing)
	// after runs once the Turn completed, before the processes stop (nil:
	// nothing).
	after func(c *apiClient, sessionID string) error
}

// echoHarness builds examples/echo-agent (unless agent names a built one)
// for the exec adapter.
func (d *demo) echoHarness(agent string) (*demoHarness, error) {
	if agent == "" {
		agent = filepath.Join(d.tmp, "echo-agent")
		d.say("building examples/echo-agent…")
		if b, err := exec.Command("go", "build", "-o", agent, "./examples/echo-agent").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("build examples/echo-agent (run the demo from the repository root, or give --agent): %v: %s", err, b)
		}
	}
	caps := filepath.Join(filepath.Dir(agent), "echo-agent.capabilities.json")
	if _, err := os.Stat(caps); err != nil {
		if caps, err = filepath.Abs(filepath.Join("examples", "echo-agent", "capabilities.json")); err != nil {
			return nil, err
		}
	}
	return &demoHarness{
		kind:    "echo",
		flags:   []string{"--harness", "exec:echo=" + agent + ":" + caps},
		about:   "exec:echo (examples/echo-agent)",
		diagram: "exec echo-agent",
		prompt:  "hello from the demo",
		steer:   "and one more thing",
		// The permission answer was applied (an outcome that is not
		// applied ends the demo first).
		steerOn: func(event, _ string) bool { return event == "interaction_outcome" },
	}, nil
}

// close stops the children, then what they used.
func (d *demo) close() {
	d.stop()
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
	d.closers = nil
}

type demoStep struct {
	at   time.Time
	text string
}

func (d *demo) say(format string, a ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	fmt.Fprintln(d.stdout, d.red.clean(fmt.Sprintf(format, a...)))
}

// api records a public API call made at at (before it was sent, so the
// diagram puts it before the frames it caused).
func (d *demo) api(at time.Time, text string) {
	d.steps = append(d.steps, demoStep{at: at.UTC(), text: text})
	d.say("  api   %s", text)
}

func (d *demo) run(outDir string, setup func() (*demoHarness, error)) error {
	data := filepath.Join(d.tmp, "data")
	frames := d.framesPath()
	d.say("agentwire demo: a real Core and a real Runtime on 127.0.0.1, store in %s", d.tmp)
	dev, err := d.issue(data, "--kind", "device", "--device", "demo-device", "--project", "demo")
	if err != nil {
		return err
	}
	proj, err := d.issue(data, "--kind", "project", "--project", "demo")
	if err != nil {
		return err
	}
	d.say("issued a credential for device demo-device of project demo, and the project's API key (secrets redacted below)")
	h, err := setup()
	if err != nil {
		return err
	}
	base, err := d.startCore(data, frames)
	if err != nil {
		return err
	}
	credFile := filepath.Join(d.tmp, "device-credential")
	if err := os.WriteFile(credFile, []byte(dev), 0o600); err != nil {
		return err
	}
	c := &apiClient{base: base, key: proj}
	// The workspace is registered with Core first: Core mints the
	// Environment's ID, and the Runtime serves exactly that ID from the
	// directory (docs/tenancy.md).
	workspaceDir := filepath.Join(d.tmp, "workspace")
	if err := os.MkdirAll(workspaceDir, 0o700); err != nil {
		return err
	}
	var env struct{ ID string }
	t0 := time.Now()
	if err := d.call(c, "POST", "/api/v1/environments", map[string]any{"device_id": "demo-device"}, &env); err != nil {
		return err
	}
	d.api(t0, "POST /api/v1/environments (device demo-device) → "+env.ID)
	rtArgs := append([]string{"runtime", "--core", base, "--device-id", "demo-device", "--credential-file", credFile}, h.flags...)
	if _, err := d.startEnv("runtime", h.env, append(rtArgs, "--environment", env.ID+"="+workspaceDir)...); err != nil {
		return err
	}
	d.say("Core at %s; Runtime started with %s, serving Environment %s from %s\n", base, h.about, env.ID, workspaceDir)

	var ses struct{ ID string }
	t0 = time.Now()
	if err := d.call(c, "POST", "/api/v1/sessions", map[string]any{"agent_kind": h.kind, "environment_id": env.ID}, &ses); err != nil {
		return err
	}
	d.api(t0, "POST /api/v1/sessions → "+ses.ID)
	input := []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": h.prompt}}}}
	var turn struct{ ID string }
	t0 = time.Now()
	if err := d.call(c, "POST", "/api/v1/sessions/"+ses.ID+"/turns", map[string]any{"input": input}, &turn); err != nil {
		return err
	}
	d.api(t0, fmt.Sprintf("POST turns %q → %s", h.prompt, turn.ID))
	status, err := d.follow(c, turn.ID, h)
	if err != nil {
		return err
	}
	if h.after != nil && strings.Contains(status, `"completed"`) {
		if err := h.after(c, ses.ID); err != nil {
			return err
		}
	}
	d.stop()
	lines, err := readFrames(frames)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	text := d.red.clean(renderSummary(lines))
	if err := os.WriteFile(filepath.Join(outDir, "transcript.txt"), []byte(d.red.clean(renderTranscript(lines))), 0o644); err != nil {
		return err
	}
	mmd := d.red.clean(renderSequence(lines, d.steps, h.diagram))
	if err := os.WriteFile(filepath.Join(outDir, "sequence.mmd"), []byte(mmd), 0o644); err != nil {
		return err
	}
	d.say("\nframes between Core and the Runtime (heartbeats folded):\n%s", text)
	d.say("outcome: %s", status)
	d.say("wrote %s and %s; both processes stopped", filepath.Join(outDir, "transcript.txt"), filepath.Join(outDir, "sequence.mmd"))
	if !strings.Contains(status, `"completed"`) {
		return fmt.Errorf("the Turn ended %s", status)
	}
	return nil
}

func (d *demo) issue(data string, args ...string) (string, error) {
	b, err := exec.Command(d.self, append([]string{"core", "credential", "issue", "--data", data}, args...)...).Output()
	if err != nil {
		return "", fmt.Errorf("credential issue: %w", err)
	}
	var c issued
	if err := json.Unmarshal(b, &c); err != nil || c.Secret == "" {
		return "", errors.New("credential issue printed no secret")
	}
	d.red.add(c.Secret)
	return c.Secret, nil
}

// start runs a child; its stderr (JSON logs) goes to a file in tmp.
func (d *demo) start(name string, args ...string) (io.ReadCloser, error) {
	return d.startEnv(name, nil, args...)
}

// startEnv is start with env added to the child's environment.
func (d *demo) startEnv(name string, env []string, args ...string) (io.ReadCloser, error) {
	cmd := exec.Command(d.self, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	logf, err := os.Create(filepath.Join(d.tmp, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := make(chan error, 1)
	go func() { ch <- cmd.Wait(); logf.Close() }()
	d.procs, d.exited = append(d.procs, cmd), append(d.exited, ch)
	return stdout, nil
}

func (d *demo) startCore(data, frames string) (string, error) {
	stdout, err := d.start("core", "core", "serve", "--listen", "127.0.0.1:0", "--data", data, "--transcript", frames)
	if err != nil {
		return "", err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("core serve did not start: %w", err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return strings.TrimSpace(strings.TrimPrefix(line, "agentwire core: listening on ")), nil
}

// stop ends the children in reverse order: SIGTERM, then wait (SIGKILL
// after 15 s). It is safe to call twice.
func (d *demo) stop() {
	for i := len(d.procs) - 1; i >= 0; i-- {
		_ = d.procs[i].Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited[i]:
		case <-time.After(15 * time.Second):
			_ = d.procs[i].Process.Kill()
			<-d.exited[i]
		}
	}
	d.procs, d.exited = nil, nil
}

func (d *demo) call(c *apiClient, method, path string, body, v any) error {
	var buf bytes.Buffer
	if err := c.call(method, path, body, &buf); err != nil {
		return err
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(buf.Bytes(), v)
}

// follow reads the Turn's event stream: it approves the permission
// question, sends one active input at the event h.steerOn picks (for
// echo, once the answer was applied), and returns the final status.
func (d *demo) follow(c *apiClient, turnID string, h *demoHarness) (string, error) {
	req, err := http.NewRequest("GET", c.base+"/api/v1/turns/"+turnID+"/events", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	client := &http.Client{Timeout: 2 * time.Minute}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET events: %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var event, data string
	steered := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && event != "":
			ev, payload := event, data
			event, data = "", ""
			if ev == "live" {
				continue // Core's marker that the history was sent
			}
			d.say("  event %s %s", ev, payload)
			switch ev {
			case "status":
				return payload, nil
			case "permission_request":
				var q struct {
					InteractionID string `json:"interaction_id"`
				}
				_ = json.Unmarshal([]byte(payload), &q)
				t0 := time.Now()
				body := map[string]any{"approved": true, "message": "approved by the demo"}
				if err := d.call(c, "POST", "/api/v1/turns/"+turnID+"/interactions/"+q.InteractionID, body, nil); err != nil {
					return "", err
				}
				d.api(t0, "POST interactions/"+q.InteractionID+" approved=true")
			case "interaction_outcome":
				if !strings.Contains(payload, `"applied"`) {
					return "", fmt.Errorf("the permission answer was not applied: %s", payload)
				}
			case "input_outcome":
				d.inputs = append(d.inputs, payload)
			}
			if !steered && h.steerOn(ev, payload) {
				steered = true
				t0 := time.Now()
				body := map[string]any{"input_id": demoInputID, "input": []any{map[string]any{"content": []any{map[string]any{"type": "input_text", "text": h.steer}}}}}
				if err := d.call(c, "POST", "/api/v1/turns/"+turnID+"/input", body, nil); err != nil {
					return "", err
				}
				d.api(t0, fmt.Sprintf("POST input %q", h.steer))
				if h.steered != nil {
					h.steered()
				}
			}
		}
	}
	return "", fmt.Errorf("the event stream ended before the Turn finished: %v", sc.Err())
}

// framesPath is the file Core writes its frame transcript to.
func (d *demo) framesPath() string { return filepath.Join(d.tmp, "frames.jsonl") }

// demoInputID is the active input's ID.
const demoInputID = "demo-input-1"

// redactor replaces every secret the demo issued.
type redactor struct{ secrets []string }

func (r *redactor) add(s string) { r.secrets = append(r.secrets, s) }

func (r *redactor) clean(s string) string {
	for _, x := range r.secrets {
		s = strings.ReplaceAll(s, x, "[redacted]")
	}
	return s
}
