package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/wire"
)

// coreProcess is a running `agentwire core serve`.
type coreProcess struct {
	base string
	logs *lockedBuffer
	pid  int
}

func startCore(t *testing.T, bin, data string) *coreProcess {
	t.Helper()
	cmd := exec.Command(bin, "core", "serve", "--listen", "127.0.0.1:0", "--data", data)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	p := &coreProcess{logs: &lockedBuffer{}}
	cmd.Stderr = p.logs
	require.NoError(t, cmd.Start())
	p.pid = cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	p.base = strings.TrimSpace(strings.TrimPrefix(line, "agentwire core: listening on "))
	require.True(t, strings.HasPrefix(p.base, "http://127.0.0.1:"), line)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return p
}

// cliJSON runs a CLI wrapper and decodes its JSON answer.
func cliJSON(t *testing.T, bin, key string, args ...string) map[string]any {
	t.Helper()
	c := exec.Command(bin, args...)
	c.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+key)
	out, err := c.Output()
	require.NoError(t, err, "%v", args)
	var v map[string]any
	require.NoError(t, json.Unmarshal(out, &v), "%s", out)
	return v
}

// scriptedRuntime plays a Runtime over a real WebSocket: bootstrap, a
// full declaration, then one Turn answered with preparing, ready,
// started, two deltas and done. It reports the first problem on errs.
func scriptedRuntime(ctx context.Context, base, secret string, errs chan<- error) {
	errs <- func() error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/agent-daemon/bootstrap", strings.NewReader(`{"device_id":"dev-1"}`))
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		var boot struct {
			WSURL string `json:"ws_url"`
		}
		err = json.NewDecoder(resp.Body).Decode(&boot)
		_ = resp.Body.Close()
		if err != nil {
			return err
		}
		ws, _, err := websocket.Dial(ctx, boot.WSURL+"?device_id=dev-1&version="+wire.Version,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + secret}}})
		if err != nil {
			return err
		}
		defer ws.CloseNow()
		send := func(id string, p wire.Payload) error {
			b, err := wire.Encode(id, p, "")
			if err != nil {
				return err
			}
			return ws.Write(ctx, websocket.MessageText, b)
		}
		yes := true
		if err := send("", wire.Heartbeat{TS: time.Now().Unix(), SupportedAgentKinds: []wire.SupportedAgentKind{
			{Kind: "codex", Available: &yes, Capabilities: wiretest.Capabilities()},
		}}); err != nil {
			return err
		}
		for {
			_, b, err := ws.Read(ctx)
			if err != nil {
				return err
			}
			m, err := wire.Decode(b, wire.CoreToRuntime)
			if err != nil {
				return err
			}
			switch p := m.Payload.(type) {
			case wire.ExecutionPrepare:
				_ = send(m.ID, wire.PreparationStatus{ExecutorID: "ex-1", Handle: "h-1", Revision: 1, State: wire.PreparationPreparing})
				err = send(m.ID, wire.PreparationStatus{ExecutorID: "ex-1", Handle: "h-1", Revision: 2, State: wire.PreparationReady, ExpiresAt: time.Now().Add(5 * time.Minute).UnixMilli()})
			case wire.ExecutionStart:
				for _, f := range []struct {
					id string
					p  wire.Payload
				}{
					{m.ID, wire.PreparationStatus{ExecutorID: "ex-1", Handle: "h-1", Revision: 3, State: wire.PreparationStarted, RunID: p.RunID}},
					{p.RunID, wire.Delta{Delta: "echo: ", Sequence: 1}},
					{p.RunID, wire.Delta{Delta: p.Input.Text(), Sequence: 2}},
					{p.RunID, wire.Done{}},
				} {
					if err = send(f.id, f.p); err != nil {
						break
					}
				}
				if err == nil {
					// Stay connected until Core closes or the test ends.
					_, _, _ = ws.Read(ctx)
					return nil
				}
			}
			if err != nil {
				return err
			}
		}
	}()
}

// TestTurnRunAgainstAScriptedRuntime: a real Core process, a scripted
// Runtime over a real WebSocket, and `agentwire turn run`, which streams
// the deltas as they arrive and exits 0 on completed.
func TestTurnRunAgainstAScriptedRuntime(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildAgentwire(t)
	data := t.TempDir()
	dev := issueCredential(t, bin, data, "--kind", "device", "--device", "dev-1", "--project", "demo")
	proj := issueCredential(t, bin, data, "--kind", "project", "--project", "demo")
	core := startCore(t, bin, data)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	errs := make(chan error, 1)
	go scriptedRuntime(ctx, core.base, dev.Secret, errs)
	defer func() {
		cancel()
		<-errs
	}()

	ses := cliJSON(t, bin, proj.Secret, "session", "create", "--core", core.base, "--kind", "codex")
	run := exec.CommandContext(ctx, bin, "turn", "run", "--core", core.base, "--session", ses["id"].(string), "hello")
	run.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+proj.Secret)
	out, err := run.Output()
	require.NoError(t, err, "turn run: %s\ncore logs: %s", out, core.logs.String())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, lines, 5, "%s", out)
	assert.True(t, strings.HasPrefix(lines[0], "turn turn_"), lines[0])
	assert.JSONEq(t, `{"delta":"echo: ","sequence":1}`, strings.TrimPrefix(lines[1], "delta "))
	assert.JSONEq(t, `{"delta":"hello","sequence":2}`, strings.TrimPrefix(lines[2], "delta "))
	assert.True(t, strings.HasPrefix(lines[3], "done "), lines[3])
	assert.JSONEq(t, `{"state":"completed"}`, strings.TrimPrefix(lines[4], "status "))

	turnID := strings.TrimPrefix(lines[0], "turn ")
	status := cliJSON(t, bin, proj.Secret, "turn", "status", "--core", core.base, turnID)
	assert.Equal(t, map[string]any{"state": "completed"}, status["status"])
	for _, s := range []string{dev.Secret, proj.Secret} {
		assert.NotContains(t, core.logs.String(), s)
	}
}

// startRuntimeProcess runs `agentwire runtime ARGS` with env (nil: this
// process's) until the test ends, then stops it with SIGTERM; it returns
// the Runtime's log.
func startRuntimeProcess(t *testing.T, bin string, env []string, args ...string) *lockedBuffer {
	t.Helper()
	rt := exec.Command(bin, append([]string{"runtime"}, args...)...)
	rt.Env = env
	logs := &lockedBuffer{}
	rt.Stderr = logs
	require.NoError(t, rt.Start())
	exited := make(chan error, 1)
	go func() { exited <- rt.Wait() }()
	t.Cleanup(func() {
		_ = rt.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = rt.Process.Kill()
			<-exited
		}
	})
	return logs
}

// startScriptSetup builds the binary and starts a real Core and a real
// Runtime whose script adapter runs steps, with a device and a project
// credential of project demo.
func startScriptSetup(t *testing.T, steps string) (bin string, core *coreProcess, proj, dev issued, rtLogs *lockedBuffer) {
	t.Helper()
	bin = buildAgentwire(t)
	data := t.TempDir()
	dev = issueCredential(t, bin, data, "--kind", "device", "--device", "dev-1", "--project", "demo")
	proj = issueCredential(t, bin, data, "--kind", "project", "--project", "demo")
	core = startCore(t, bin, data)
	dir := t.TempDir()
	cred := filepath.Join(dir, "credential")
	require.NoError(t, os.WriteFile(cred, []byte(dev.Secret), 0o600))
	script := filepath.Join(dir, "script.json")
	require.NoError(t, os.WriteFile(script, []byte(steps), 0o600))
	rtLogs = startRuntimeProcess(t, bin, nil, "--core", core.base, "--device-id", "dev-1", "--credential-file", cred, "--harness", "script="+script)
	return bin, core, proj, dev, rtLogs
}

// TestTurnRunAgainstTheRuntimeProcess: both real binaries, the Runtime
// with its script adapter.
func TestTurnRunAgainstTheRuntimeProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, core, proj, dev, rtLogs := startScriptSetup(t, `{"steps":[{"delta":"one "},{"delta":"two"}]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ses := cliJSON(t, bin, proj.Secret, "session", "create", "--core", core.base, "--kind", "script")
	run := exec.CommandContext(ctx, bin, "turn", "run", "--core", core.base, "--session", ses["id"].(string), "hi")
	run.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+proj.Secret)
	out, err := run.Output()
	require.NoError(t, err, "turn run: %s\ncore logs: %s\nruntime logs: %s", out, core.logs.String(), rtLogs.String())
	assert.Contains(t, string(out), `"delta":"one "`)
	assert.Contains(t, string(out), `"delta":"two"`)
	assert.Contains(t, string(out), `status {"state":"completed"}`)
	assert.NotContains(t, rtLogs.String(), dev.Secret)
	assert.NotContains(t, core.logs.String(), dev.Secret)
}

// The turn verbs against real processes: attach follows a Turn and its
// Ctrl-C detaches with the command that follows it again; answer approves
// the pending permission; input reports written, then accepted, from the
// real Runtime; a second attach after the detach sees the remaining events
// exactly once.
func TestTurnVerbsAgainstTheRuntimeProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildAgentwire(t)
	data := t.TempDir()
	dev := issueCredential(t, bin, data, "--kind", "device", "--device", "dev-1", "--project", "demo")
	proj := issueCredential(t, bin, data, "--kind", "project", "--project", "demo")
	core := startCore(t, bin, data)
	dir := t.TempDir()
	cred := filepath.Join(dir, "credential")
	require.NoError(t, os.WriteFile(cred, []byte(dev.Secret), 0o600))
	script := filepath.Join(dir, "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"steps":[{"delta":"a"},{"permission":{"request_id":"perm-1","tool":"shell","title":"run ls"}},{"await_input":true}]}`), 0o600))
	// The environment stands in for --core.
	rtLogs := startRuntimeProcess(t, bin, append(os.Environ(), CoreEnv+"="+core.base), "--device-id", "dev-1", "--credential-file", cred, "--harness", "script="+script)
	env := append(os.Environ(), "AGENTWIRE_API_KEY="+proj.Secret, CoreEnv+"="+core.base)
	cli := func(args ...string) (string, error) {
		c := exec.Command(bin, args...)
		c.Env = env
		out, err := c.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return string(out), err
	}
	ses := cliJSON(t, bin, proj.Secret, "session", "create", "--core", core.base, "--kind", "script")
	// Flags after the words, and the words unquoted.
	out, err := cli("turn", "submit", "do", "the", "thing", "--session", ses["id"].(string))
	require.NoError(t, err)
	var turn map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &turn), out)
	turnID := turn["id"].(string)

	// attach until the permission request, then Ctrl-C.
	attach := exec.Command(bin, "turn", "attach", turnID)
	attach.Env = env
	attachIn, err := attach.StdinPipe() // held open: the prompt waits
	require.NoError(t, err)
	defer attachIn.Close()
	attachOut, err := attach.StdoutPipe()
	require.NoError(t, err)
	attachErr := &lockedBuffer{}
	attach.Stderr = attachErr
	require.NoError(t, attach.Start())
	lines := bufio.NewScanner(attachOut)
	var seen []string
	interaction := ""
	for interaction == "" && lines.Scan() {
		seen = append(seen, lines.Text())
		if ev, data, ok := strings.Cut(lines.Text(), " "); ok && ev == "permission_request" {
			var q struct {
				InteractionID string `json:"interaction_id"`
			}
			require.NoError(t, json.Unmarshal([]byte(data), &q))
			interaction = q.InteractionID
		}
	}
	require.NotEmpty(t, interaction, "attach printed no permission request: %v\n%s", seen, core.logs.String())
	// Its standard input is a pipe, not a terminal: the question is left
	// for another client, not answered.
	require.Eventually(t, func() bool { return strings.Contains(attachErr.String(), "questions are left for another client") }, 20*time.Second, 10*time.Millisecond)
	assert.NotContains(t, attachErr.String(), "approve?")
	require.NoError(t, attach.Process.Signal(os.Interrupt))
	err = attach.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 130, ee.ExitCode())
	hint := attachErr.String()
	assert.Contains(t, hint, "agentwire turn cancel "+turnID)
	m := regexp.MustCompile(`agentwire turn attach --after (\S+) ` + regexp.QuoteMeta(turnID)).FindStringSubmatch(hint)
	require.Len(t, m, 2, "the detach names where to follow again: %s", hint)

	out, err = cli("turn", "answer", "--approve", turnID, interaction)
	require.NoError(t, err)
	assert.Contains(t, out, `"interaction_id"`)
	assert.Contains(t, hint, "still waiting:   agentwire turn answer "+turnID+" "+interaction, "the detach names the open question")

	// Once the answer is settled, following from the start on a terminal
	// replays the question and its outcome and asks nothing.
	require.Eventually(t, func() bool { return streamHas(t, core.base, proj.Secret, turnID, "interaction_outcome") }, 20*time.Second, 100*time.Millisecond)
	term, tty := openPTY(t)
	_, _ = term.WriteString("n\n") // a question asked again would read this
	replay := exec.Command(bin, "turn", "attach", turnID)
	replay.Env, replay.Stdin = env, tty
	replayErr := &lockedBuffer{}
	replay.Stderr = replayErr
	replayOut, err := replay.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, replay.Start())
	replayLines := bufio.NewScanner(replayOut)
	for replayLines.Scan() && !strings.HasPrefix(replayLines.Text(), "interaction_outcome ") {
	}
	// Once Core's live event comes, an open question would be asked; the
	// check after the Turn's end below sees whether one was.

	out, err = cli("turn", "input", turnID, "and", "more")
	require.NoError(t, err, out)
	written := strings.Index(out, `"written":true`)
	accepted := strings.Index(out, `"accepted":true`)
	assert.True(t, written >= 0 && accepted > written, "written, then accepted:\n%s", out)
	assert.Contains(t, out, "outcome accepted")
	for replayLines.Scan() {
	}
	require.NoError(t, replay.Wait(), "the replaying attach follows the Turn to its completion: %s", replayErr.String())
	assert.NotContains(t, replayErr.String(), "approve?")

	// --json: JSON Lines, each a parsable record.
	out, err = cli("turn", "attach", "--json", turnID)
	require.NoError(t, err)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec struct {
			Event string          `json:"event"`
			Data  json.RawMessage `json:"data"`
		}
		require.NoError(t, json.Unmarshal([]byte(l), &rec), "a JSON Lines record: %s", l)
		require.NotEmpty(t, rec.Event, l)
	}
	assert.Contains(t, out, `{"event":"status","data":{"state":"completed"}}`)

	// Following again after the detach: the rest, each event once.
	out, err = cli("turn", "attach", "--after", m[1], turnID)
	require.NoError(t, err, "%s\nruntime: %s", out, rtLogs.String())
	assert.NotContains(t, out, "permission_request", "an event before --after came again")
	for _, once := range []string{"permission_decision ", "interaction_decision_ack ", `"delta":"[perm-1:allowed]"`, `"delta":"and more"`, "done "} {
		assert.Equal(t, 1, strings.Count(out, once), "%q once in:\n%s", once, out)
	}
	assert.Contains(t, out, `status {"state":"completed"}`)

	out, err = cli("turn", "list", "--session", ses["id"].(string))
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^`+regexp.QuoteMeta(turnID)+`\s+completed\s`, out, "the table lists the Turn and its state")
	out, err = cli("turn", "list", "--json", "--session", ses["id"].(string))
	require.NoError(t, err)
	var listed struct {
		Turns []map[string]any `json:"turns"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &listed), out)
	require.Len(t, listed.Turns, 1)

	// Ctrl-C twice within the window cancels the followed Turn: here one
	// that stays queued (no device serves its kind).
	idle := cliJSON(t, bin, proj.Secret, "session", "create", "--core", core.base, "--kind", "nobody-serves-this")
	out, err = cli("turn", "submit", "--quiet", "--session", idle["id"].(string), "never placed")
	require.NoError(t, err)
	second := strings.TrimSpace(out)
	attach2 := exec.Command(bin, "turn", "attach", second)
	attach2.Env = env
	in2, err := attach2.StdinPipe()
	require.NoError(t, err)
	defer in2.Close()
	err2 := &lockedBuffer{}
	attach2.Stderr = err2
	require.NoError(t, attach2.Start())
	require.Eventually(t, func() bool { return strings.Contains(err2.String(), "following turn "+second) }, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, attach2.Process.Signal(os.Interrupt))
	require.Eventually(t, func() bool { return strings.Contains(err2.String(), "cancels it now") }, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, attach2.Process.Signal(os.Interrupt))
	err = attach2.Wait()
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 130, ee.ExitCode())
	assert.Contains(t, err2.String(), "cancel sent:")
	require.Eventually(t, func() bool {
		st, err := cli("turn", "status", second)
		return err == nil && strings.Contains(st, `"state": "cancelled"`)
	}, 30*time.Second, 50*time.Millisecond, "the double Ctrl-C cancelled the Turn")
}

// streamHas reads the Turn's event stream for a second and reports whether
// it holds needle.
func streamHas(t *testing.T, base, key, turnID, needle string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/turns/"+turnID+"/events", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body) // until the deadline cuts a running Turn's stream
	return strings.Contains(string(b), needle)
}
