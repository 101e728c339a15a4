package exec_test

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/runtime/adapters/exec"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

var echoAgent string // the example agent, built once

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "echo-agent")
	if err != nil {
		panic(err)
	}
	echoAgent = filepath.Join(dir, "echo-agent")
	out, err := osexec.Command("go", "build", "-o", echoAgent, "../../../examples/echo-agent").CombinedOutput()
	if err != nil {
		panic("building the example agent: " + err.Error() + "\n" + string(out))
	}
	code := 0
	func() {
		defer func() { _ = os.RemoveAll(dir) }()
		code = m.Run()
		if code == 0 {
			if err := goleak.Find(); err != nil {
				println(err.Error())
				code = 1
			}
		}
	}()
	os.Exit(code)
}

const capFile = "../../../examples/echo-agent/capabilities.json"

func text(s string) wire.MessageInput {
	return wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: s}}}}
}

// turn runs one Turn of adapter a on its own goroutine; events arrive on
// the returned channel and the result on res.
type turnRun struct {
	events  chan wire.Payload
	notices chan harness.InputNotice
	res     chan wire.Done
	exe     harness.Executor
}

func startTurn(t *testing.T, ctx context.Context, a *exec.Adapter, input string) *turnRun {
	t.Helper()
	exe, err := a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "s", Declaration: a.Declaration()})
	require.NoError(t, err)
	tr := &turnRun{events: make(chan wire.Payload, 64), notices: make(chan harness.InputNotice, 4), res: make(chan wire.Done, 1), exe: exe}
	go func() {
		d, err := exe.Run(ctx, harness.Turn{RunID: "run", Input: text(input), Declaration: a.Declaration(),
			Notify: func(n harness.InputNotice) { tr.notices <- n }},
			func(_ context.Context, p wire.Payload) error { tr.events <- p; return nil })
		assert.NoError(t, err)
		tr.res <- d
	}()
	return tr
}

func (tr *turnRun) next(t *testing.T) wire.Payload {
	t.Helper()
	select {
	case p := <-tr.events:
		return p
	case <-time.After(20 * time.Second):
		t.Fatal("no event from the agent")
		return nil
	}
}

func TestEchoAgentTurn(t *testing.T) {
	a, err := exec.New(exec.Config{Kind: "echo", Command: echoAgent, CapabilityFile: capFile})
	require.NoError(t, err)
	require.True(t, a.Declaration().Available)
	tr := startTurn(t, context.Background(), a, "hello there")
	assert.Equal(t, wire.Delta{Delta: "hello ", Sequence: 1}, tr.next(t))
	assert.Equal(t, wire.Delta{Delta: "there", Sequence: 2}, tr.next(t))
	pr, ok := tr.next(t).(wire.PermissionRequest)
	require.True(t, ok)
	assert.Equal(t, "echo-permission-run", pr.RequestID, "the interaction ID carries the Run ID")

	dec := harness.Decider(tr.exe.(harness.Decider))
	// An answer of the wrong kind is refused before anything is written.
	require.Error(t, dec.Decide(context.Background(), "run", harness.Answer{InteractionID: pr.RequestID, Result: &wire.FunctionResult{}}))
	require.ErrorIs(t, dec.Decide(context.Background(), "other-run", harness.Answer{InteractionID: pr.RequestID, Permission: &wire.PermissionDecision{}}), harness.ErrRunInactive)
	yes := true
	require.NoError(t, dec.Decide(context.Background(), "run", harness.Answer{InteractionID: pr.RequestID, Permission: &wire.PermissionDecision{DeliveryID: "d", Approved: &yes}}))
	assert.Equal(t, wire.Delta{Delta: " (allowed)", Sequence: 3}, tr.next(t))

	require.NoError(t, tr.exe.(harness.Steerer).Steer(context.Background(), "run", "in-1", text("more")))
	select {
	case n := <-tr.notices:
		assert.Equal(t, harness.InputNotice{InputID: "in-1", Accepted: true}, n)
	case <-time.After(20 * time.Second):
		t.Fatal("no acceptance")
	}
	before, ok := tr.next(t).(wire.ToolCall)
	require.True(t, ok)
	assert.Equal(t, wire.ToolStageBefore, before.Stage)
	assert.Equal(t, "echo", before.Name)
	after, ok := tr.next(t).(wire.ToolCall)
	require.True(t, ok)
	assert.Equal(t, wire.ToolStageAfter, after.Stage)
	assert.Equal(t, before.ID, after.ID)
	assert.Nil(t, after.Observation, "no observation without observe_tool_observations")
	assert.Equal(t, wire.Delta{Delta: " more", Sequence: 4}, tr.next(t))
	done := <-tr.res
	assert.Equal(t, "hello there (allowed) more", done.Content, "done's content is the deltas joined")
	require.NotNil(t, done.Metadata)
	assert.Equal(t, "echo-s", done.Metadata.AgentSessionID, "a native Session ID derived from the Session")
	require.NoError(t, tr.exe.Close(context.Background()))
}

// script writes a shell agent and its capabilities next to it.
func script(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "agent")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755))
	caps, err := os.ReadFile(capFile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path+".capabilities.json", caps, 0o644))
	return path
}

func requireFailure(t *testing.T, tr *turnRun, code wire.EngineFailureCode, text string) {
	t.Helper()
	var last wire.Payload
	for {
		select {
		case p := <-tr.events:
			last = p
			continue
		case d := <-tr.res:
			ef, ok := last.(wire.ErrorFrame)
			require.True(t, ok, "an error frame precedes done, got %#v", last)
			got, _, _ := wire.ClassifyEngineFailure(ef)
			assert.Equal(t, code, got)
			assert.Contains(t, ef.Error, text)
			_ = d
			return
		case <-time.After(20 * time.Second):
			t.Fatal("the Turn did not end")
		}
	}
}

func TestAgentFailuresFailOnlyTheTurn(t *testing.T) {
	cases := map[string]struct {
		body string
		code wire.EngineFailureCode
		text string
	}{
		"exits before done": {`read l; echo '{"type":"delta","payload":{"delta":"x"}}'; echo oops >&2; exit 3`, wire.EngineServerError, "ended before done"},
		"writes garbage":    {`read l; echo 'this is not json'; sleep 60`, wire.EngineServerError, "line 1"},
		"unknown event":     {`read l; echo '{"type":"heartbeat","payload":{}}'; sleep 60`, wire.EngineServerError, "not an agent event"},
		"invalid payload":   {`read l; echo '{"type":"delta","payload":{"delta":1}}'; sleep 60`, wire.EngineServerError, "payload.delta"},
		"sets an id":        {`read l; echo '{"type":"delta","id":"x","payload":{"delta":"a"}}'; sleep 60`, wire.EngineServerError, "id is set by the adapter"},
		"hangs":             {`read l; sleep 60`, wire.EngineRequestTimeout, "wrote nothing"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := exec.New(exec.Config{Kind: "k", Command: script(t, c.body), IdleTimeout: 200 * time.Millisecond, Grace: 100 * time.Millisecond})
			require.NoError(t, err)
			requireFailure(t, startTurn(t, context.Background(), a, "hi"), c.code, c.text)
		})
	}
}

func TestCapabilityFileIsValidatedWhole(t *testing.T) {
	dir := t.TempDir()
	caps, err := os.ReadFile(capFile)
	require.NoError(t, err)
	write := func(s string) string {
		p := filepath.Join(dir, "caps.json")
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
		return p
	}
	_, err = exec.New(exec.Config{Kind: "k", Command: echoAgent, CapabilityFile: write(strings.Replace(string(caps), `"usage": false,`, "", 1))})
	require.ErrorContains(t, err, "usage")
	_, err = exec.New(exec.Config{Kind: "k", Command: echoAgent, CapabilityFile: write(strings.Replace(string(caps), `"version"`, `"extra": 1, "version"`, 1))})
	require.ErrorContains(t, err, "extra")
	_, err = exec.New(exec.Config{Kind: "k", Command: echoAgent, CapabilityFile: filepath.Join(dir, "missing.json")})
	require.Error(t, err)
	a, err := exec.New(exec.Config{Kind: "k", Command: filepath.Join(dir, "no-such-agent"), CapabilityFile: write(string(caps))})
	require.NoError(t, err)
	assert.False(t, a.Declaration().Available, "a missing command is declared unavailable")
}

// TestTurnRunsInTheEnvironmentWorkspace: a configuration bound to an
// Environment runs its command in that Environment's workspace
// (ExecutorConfig.WorkspaceDir); one of Environment none runs in the
// adapter's configured Dir.
func TestTurnRunsInTheEnvironmentWorkspace(t *testing.T) {
	ws, fallback := t.TempDir(), t.TempDir()
	body := `read l; d=$(pwd -P); printf '{"type":"done","payload":{"content":"%s"}}\n' "$d"`
	a, err := exec.New(exec.Config{Kind: "k", Command: script(t, body), Dir: fallback})
	require.NoError(t, err)
	for name, c := range map[string]struct{ workspace, want string }{
		"bound Environment": {workspace: ws, want: ws},
		"Environment none":  {want: fallback},
	} {
		t.Run(name, func(t *testing.T) {
			exe, err := a.NewExecutor(context.Background(), harness.ExecutorConfig{SessionID: "s", Declaration: a.Declaration(), WorkspaceDir: c.workspace})
			require.NoError(t, err)
			defer func() { require.NoError(t, exe.Close(context.Background())) }()
			done, err := exe.Run(context.Background(), harness.Turn{RunID: "run", Input: text("hi"), Declaration: a.Declaration()},
				func(context.Context, wire.Payload) error { return nil })
			require.NoError(t, err)
			want, err := filepath.EvalSymlinks(c.want)
			require.NoError(t, err)
			assert.Equal(t, want, done.Content)
		})
	}
}
