package acp

// The adapter's mapping over real pipes against the scripted fake agent
// (fakeagent_test.go): chunks, tool calls, permission options, the
// cancellation's settlement, session/load, steering as the next prompt,
// workspace-confined fs/*, terminal/* declined, and the process group
// killed at close.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// fakeWait bounds every wait on the fake: a failure bound, never a wait
// the test relies on.
const fakeWait = 30 * time.Second

func fakeAdapter(t *testing.T, stubborn bool) *Adapter {
	t.Helper()
	env := []string{fakeEnv + "=agent"}
	if stubborn {
		env = append(env, stubbornEnv+"=1")
	}
	ag := Agent{Kind: "fake", Command: os.Args[0], Args: []string{"-test.run=^$"}, Env: env, Available: true, LoadSession: true,
		Controls: func(string, wire.PromptRequest) ([]string, error) { return nil, nil }}
	a, err := New(Config{Agent: ag, StateDir: t.TempDir(), CloseGrace: 500 * time.Millisecond, CancelWait: fakeWait})
	require.NoError(t, err)
	return a
}

func startFake(t *testing.T, a *Adapter, ws string, agentSession string) *executor {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), fakeWait)
	defer cancel()
	cfg := wire.PromptRequest{ObserveToolObservations: true, AgentSessionID: agentSession,
		ExecutionControls: &wire.ExecutionControls{WebSearch: wire.WebSearchDisabled}}
	exe, err := a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "6b1f0c2e-3d4a-4b5c-9d6e-0000000000fa", Configuration: cfg,
		Declaration: a.Declaration(), WorkspaceDir: ws})
	require.NoError(t, err)
	e := exe.(*executor)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), fakeWait)
		defer cancel()
		assert.NoError(t, e.Close(ctx))
	})
	return e
}

// fakeTurn is one running Run on the fake.
type fakeTurn struct {
	rec     *recorder
	out     chan error
	done    wire.Done
	cancel  context.CancelFunc
	mu      sync.Mutex
	notices []harness.InputNotice
}

func runFake(t *testing.T, e *executor, runID, input string) *fakeTurn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), fakeWait)
	ft := &fakeTurn{rec: newRecorder(), out: make(chan error, 1), cancel: cancel}
	notify := func(n harness.InputNotice) {
		ft.mu.Lock()
		ft.notices = append(ft.notices, n)
		ft.mu.Unlock()
	}
	go func() {
		d, err := e.Run(ctx, harness.Turn{RunID: runID, Input: text(input), Declaration: e.declaration(), Notify: notify}, ft.rec.emit)
		ft.done = d
		ft.out <- err
	}()
	return ft
}

func (ft *fakeTurn) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-ft.out:
		ft.cancel()
		return err
	case <-time.After(fakeWait):
		t.Fatal("the Run never returned")
		return nil
	}
}

func (ft *fakeTurn) ask(t *testing.T) wire.PermissionRequest {
	t.Helper()
	select {
	case q := <-ft.rec.asked:
		return q
	case <-time.After(fakeWait):
		t.Fatal("no permission request")
		return wire.PermissionRequest{}
	}
}

// firstDelta waits, bounded, for the Run's first delta.
func (ft *fakeTurn) firstDelta(t *testing.T) {
	t.Helper()
	require.Eventually(t, func() bool { return ft.text() != "" }, fakeWait, 5*time.Millisecond, "no delta")
}

func (ft *fakeTurn) text() string {
	var b strings.Builder
	for _, f := range ft.rec.all() {
		if d, ok := f.(wire.Delta); ok {
			b.WriteString(d.Delta)
		}
	}
	return b.String()
}

// declaration is the Executor's kind as the adapter declares it.
func (e *executor) declaration() harness.Declaration {
	return harness.Declaration{Kind: e.cfg.Agent.Kind, Available: true, Capabilities: (&Adapter{cfg: e.cfg}).capabilities()}
}

func TestFakeChunksToDeltaAndThinking(t *testing.T) {
	e := startFake(t, fakeAdapter(t, false), t.TempDir(), "")
	ft := runFake(t, e, "run-chunks", "CHUNKS")
	require.NoError(t, ft.wait(t))
	var thinking []wire.Thinking
	var deltas []wire.Delta
	for _, f := range ft.rec.all() {
		switch v := f.(type) {
		case wire.Thinking:
			thinking = append(thinking, v)
		case wire.Delta:
			deltas = append(deltas, v)
		}
	}
	assert.Equal(t, []wire.Thinking{{Text: "pondering", Sequence: 1}}, thinking)
	assert.Equal(t, []wire.Delta{{Delta: "Hel", Sequence: 1}, {Delta: "lo", Sequence: 2}}, deltas)
	assert.Equal(t, "Hello", ft.done.Content)
	assert.Equal(t, "fake-1", ft.done.Metadata.AgentSessionID, "done carries the native session")
}

func TestFakeToolCallWithObservation(t *testing.T) {
	e := startFake(t, fakeAdapter(t, false), t.TempDir(), "")
	ft := runFake(t, e, "run-tool", "TOOL")
	require.NoError(t, ft.wait(t))
	var calls []wire.ToolCall
	for _, f := range ft.rec.all() {
		if c, ok := f.(wire.ToolCall); ok {
			require.NoError(t, c.Validate())
			calls = append(calls, c)
		}
	}
	require.Len(t, calls, 2, "tool_call before and after")
	before, after := calls[0], calls[1]
	assert.Equal(t, wire.ToolStageBefore, before.Stage)
	assert.JSONEq(t, `{"command":"ls -la"}`, string(before.Args))
	assert.Equal(t, wire.ToolStageAfter, after.Stage)
	assert.Equal(t, "t1", after.ID)
	require.NotNil(t, after.Observation)
	assert.Equal(t, "command", after.Observation.Kind, "kind execute is a command")
	assert.Equal(t, "ls -la", after.Observation.Command, "the title is the command line")
	assert.Equal(t, "completed", after.Observation.Status)
	assert.JSONEq(t, `{"stdout":"a b"}`, string(after.Observation.Output), "rawOutput is the output")
	assert.Equal(t, "listed", ft.done.Content)
}

// Core's approval selects the allow_once option and a denial the
// reject_once one; allow_always, offered first, is never chosen.
func TestFakePermissionMapsToTheOfferedOptions(t *testing.T) {
	e := startFake(t, fakeAdapter(t, false), t.TempDir(), "")
	for _, c := range []struct {
		approve bool
		want    string
	}{{true, "selected:" + fakeOptOnce}, {false, "selected:" + fakeOptNo}} {
		runID := "run-ask-" + strconv.FormatBool(c.approve)
		ft := runFake(t, e, runID, "ASK")
		q := ft.ask(t)
		assert.Equal(t, "rm x", q.Title)
		approve := c.approve
		require.NoError(t, e.Decide(t.Context(), runID, harness.Answer{InteractionID: q.RequestID,
			Permission: &wire.PermissionDecision{DeliveryID: "d-" + runID, Approved: &approve}}))
		require.NoError(t, ft.wait(t))
		assert.Equal(t, c.want, ft.done.Content)
		err := e.Decide(t.Context(), runID, harness.Answer{InteractionID: q.RequestID,
			Permission: &wire.PermissionDecision{DeliveryID: "late", Approved: &approve}})
		assert.ErrorIs(t, err, harness.ErrRunInactive, "an answer after the Run is not applied")
	}
}

// session/cancel is sent, and the prompt's stopReason cancelled settles
// the cancellation: Run returns without error (the receipt applied).
func TestFakeCancelSettledByStopReasonCancelled(t *testing.T) {
	e := startFake(t, fakeAdapter(t, false), t.TempDir(), "")
	ft := runFake(t, e, "run-hang", "HANG")
	ft.firstDelta(t)
	ft.cancel()
	err := ft.wait(t)
	require.NoError(t, err, "stopReason cancelled settles the cancellation")
	assert.False(t, errors.Is(err, harness.ErrCancelUnsettled))
	assert.Equal(t, "waiting", ft.done.Content)
	// The agent is still usable: the next Run of the Session runs.
	next := runFake(t, e, "run-after", "hello")
	require.NoError(t, next.wait(t))
	assert.Equal(t, "got:hello", next.done.Content)
}

// A cancellation with a permission request open settles: the request is
// withdrawn with the Run (answered cancelled, or its prompt cancelled),
// the prompt ends cancelled, and an answer after that is not applied.
func TestFakeCancelWithdrawsOpenPermission(t *testing.T) {
	e := startFake(t, fakeAdapter(t, false), t.TempDir(), "")
	ft := runFake(t, e, "run-ask-cancel", "ASK")
	q := ft.ask(t)
	ft.cancel()
	require.NoError(t, ft.wait(t), "stopReason cancelled settles the cancellation")
	assert.NotContains(t, ft.done.Content, "selected:", "no option was selected")
	yes := true
	err := e.Decide(t.Context(), "run-ask-cancel", harness.Answer{InteractionID: q.RequestID,
		Permission: &wire.PermissionDecision{DeliveryID: "late", Approved: &yes}})
	assert.ErrorIs(t, err, harness.ErrRunInactive)
}

func TestFakeSessionLoadForResume(t *testing.T) {
	a := fakeAdapter(t, false)
	e := startFake(t, a, t.TempDir(), fakeSavedID)
	ft := runFake(t, e, "run-resumed", "again")
	require.NoError(t, ft.wait(t))
	assert.Equal(t, "got:again", ft.done.Content, "the replayed history belongs to no Run")
	assert.Equal(t, fakeSavedID, ft.done.Metadata.AgentSessionID, "the Turn ran in the loaded session")

	ctx, cancel := context.WithTimeout(t.Context(), fakeWait)
	defer cancel()
	_, err := a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "6b1f0c2e-3d4a-4b5c-9d6e-0000000000fb",
		Configuration: wire.PromptRequest{AgentSessionID: "fake-unknown", StrictResume: true}, Declaration: a.Declaration()})
	require.Error(t, err, "a strict resume of an unknown session fails, never starts afresh")
	assert.Contains(t, err.Error(), "session/load fake-unknown")
}

// Steered input is written into the Inbox at once and submitted as the
// Run's next session/prompt when the current one ends; done waits for it.
func TestFakeSteeringIsTheNextPrompt(t *testing.T) {
	e := startFake(t, fakeAdapter(t, false), t.TempDir(), "")
	ft := runFake(t, e, "run-steer", "STEER")
	ft.firstDelta(t)
	require.NoError(t, e.Steer(t.Context(), "run-steer", "input-1", text("more please")), "written")
	q := ft.ask(t)
	yes := true
	require.NoError(t, e.Decide(t.Context(), "run-steer", harness.Answer{InteractionID: q.RequestID,
		Permission: &wire.PermissionDecision{DeliveryID: "d-steer", Approved: &yes}}))
	require.NoError(t, ft.wait(t))
	assert.Equal(t, "firstselected:oncegot:more please", ft.done.Content, "the steered input ran in the same Run, after the first prompt")
	ft.mu.Lock()
	defer ft.mu.Unlock()
	assert.Equal(t, []harness.InputNotice{{InputID: "input-1", Accepted: true}}, ft.notices, "accepted once, when submitted")
	assert.ErrorIs(t, e.Steer(t.Context(), "run-steer", "input-2", text("late")), harness.ErrRunInactive)
}

// fs/* reach the Session's workspace only; terminal/* is declined.
func TestFakeFilesystemConfinedAndTerminalDeclined(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(ws, "in.txt"), []byte("inside text"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(ws, "link")))
	e := startFake(t, fakeAdapter(t, false), ws, "")
	say := func(input string) string {
		ft := runFake(t, e, "run-"+strconv.FormatInt(time.Now().UnixNano(), 36), input)
		require.NoError(t, ft.wait(t))
		return ft.done.Content
	}
	assert.Equal(t, "read:inside text", say("READ "+filepath.Join(ws, "in.txt")))
	got := say("READ " + filepath.Join(outside, "secret.txt"))
	assert.True(t, strings.HasPrefix(got, "readerr:") && strings.Contains(got, "outside the Session's workspace"), got)
	got = say("READ " + filepath.Join(ws, "..", filepath.Base(outside), "secret.txt"))
	assert.True(t, strings.HasPrefix(got, "readerr:"), "a path that climbs out is refused: %s", got)
	got = say("READ " + filepath.Join(ws, "link", "secret.txt"))
	assert.True(t, strings.HasPrefix(got, "readerr:"), "a symbolic link out is refused by the confined root: %s", got)

	assert.Equal(t, "wrote", say("WRITE "+filepath.Join(ws, "new.txt")+" fresh"))
	b, err := os.ReadFile(filepath.Join(ws, "new.txt"))
	require.NoError(t, err)
	assert.Equal(t, "fresh", string(b))
	got = say("WRITE " + filepath.Join(outside, "planted.txt") + " bad")
	assert.True(t, strings.HasPrefix(got, "writeerr:"), got)
	assert.NoFileExists(t, filepath.Join(outside, "planted.txt"), "nothing is written outside the workspace")
	got = say("WRITE " + filepath.Join(ws, "link", "planted.txt") + " bad")
	assert.True(t, strings.HasPrefix(got, "writeerr:"), got)
	assert.NoFileExists(t, filepath.Join(outside, "planted.txt"))

	got = say("TERM")
	assert.True(t, strings.HasPrefix(got, "termerr:") && strings.Contains(got, "no terminals"), "terminal/* is declined: %s", got)
}

// An agent that ignores stdin EOF and SIGTERM and has a child that
// ignores SIGTERM too leaves nothing behind: Close kills the group.
func TestFakeCloseKillsTheProcessGroup(t *testing.T) {
	a := fakeAdapter(t, true)
	ctx, cancel := context.WithTimeout(t.Context(), fakeWait)
	defer cancel()
	exe, err := a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "6b1f0c2e-3d4a-4b5c-9d6e-0000000000fc",
		Configuration: wire.PromptRequest{}, Declaration: a.Declaration(), WorkspaceDir: t.TempDir()})
	require.NoError(t, err)
	e := exe.(*executor)
	ft := runFake(t, e, "run-pids", "PIDS")
	require.NoError(t, ft.wait(t))
	fields := strings.Fields(strings.TrimPrefix(ft.done.Content, "pids:"))
	require.Len(t, fields, 2, "the fake reports its pid and its child's: %q", ft.done.Content)
	var pids []int
	for _, f := range fields {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err)
		require.True(t, alive(pid), "pid %d runs before Close", pid)
		pids = append(pids, pid)
	}
	require.NoError(t, e.Close(ctx))
	for _, pid := range pids {
		// The child is reparented when the agent dies; whoever reaps it
		// does so asynchronously, so its end is polled, bounded.
		assert.Eventually(t, func() bool { return !alive(pid) }, fakeWait, 10*time.Millisecond, "pid %d outlived Close", pid)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
