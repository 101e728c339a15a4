package codex

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

// Resume: a second Executor (a new app-server process) resumes the thread
// the first one's done reported; the model sees the earlier exchange, the
// native Session ID stays, and usage is the second Run's alone.
func TestHarnessCodexResumeOnANewExecutor(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	cfg := hcfg(r.a, r.ws)
	e1 := r.executor(cfg)
	res1 := wait(t, start(ctx, e1, "run-1", text("Remember the word kumquat"), newRecorder(), nil))
	require.NoError(t, res1.err)
	require.NotNil(t, res1.done.Metadata)
	thread := res1.done.Metadata.AgentSessionID
	require.NotEmpty(t, thread)
	pid1 := e1.proc.Pid()
	require.NoError(t, e1.Close(ctx))

	cfg.Configuration.AgentSessionID = thread
	e2 := r.executor(cfg)
	assert.NotEqual(t, pid1, e2.proc.Pid(), "a new process")
	rec := newRecorder()
	res2 := wait(t, start(ctx, e2, "run-2", text("What was the word?"), rec, nil))
	require.NoError(t, res2.err)
	require.NotNil(t, res2.done.Metadata)
	assert.Equal(t, thread, res2.done.Metadata.AgentSessionID)

	reqs := r.srv.TurnRequests()
	require.Len(t, reqs, 2)
	users := strings.Join(reqs[1].UserTexts(), "\n")
	assert.Contains(t, users, "Remember the word kumquat", "the earlier user message is in the resumed history")
	assert.Contains(t, string(reqs[1].RawBody), "Hello from the scripted model.", "and the earlier answer")
	assert.Equal(t, "What was the word?", reqs[1].LastUserText())
	u := modeltest.DefaultUsage()
	assert.Equal(t, [5]int64{u.InputTokens, u.CachedTokens, u.OutputTokens, u.ReasoningTokens, u.TotalTokens()}, tokens(t, res2.done.Usage),
		"the snapshot is the thread total minus the total before the Run")
}

// Strict resume of a thread Codex does not know fails the preparation
// with a finite error; no new thread is started and no process is left.
func TestHarnessCodexStrictResumeOfAnUnknownThreadFails(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	cfg := hcfg(r.a, r.ws)
	cfg.Configuration.AgentSessionID = "01a23306-f3ca-7b50-b9c7-4a53def0748c"
	exe, err := r.a.NewExecutor(ctx, cfg)
	require.Error(t, err)
	assert.Nil(t, exe)
	assert.Contains(t, err.Error(), "resuming thread 01a23306-f3ca-7b50-b9c7-4a53def0748c")
	var re *RPCError
	assert.ErrorAs(t, err, &re, "Codex refused it")
	assert.Empty(t, r.srv.TurnRequests())
	sessions, _ := filepath.Glob(filepath.Join(r.a.state, "homes", "*", "sessions", "*", "*", "*", "*.jsonl"))
	assert.Empty(t, sessions, "no new thread was recorded")
}

// Environment none: the thread runs in a private empty directory the
// Executor owns, removed when it closes.
func TestHarnessCodexEnvironmentNone(t *testing.T) {
	r := newRig(t, nil, modeltest.WithTurns(modeltest.Reply(modeltest.CodexExec("pwd && ls -a"))))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	cfg := hcfg(r.a, "")
	exe, err := r.a.NewExecutor(ctx, cfg)
	require.NoError(t, err)
	e := exe.(*executor)
	scratch := e.scratch
	require.NotEmpty(t, scratch)
	entries, err := os.ReadDir(scratch)
	require.NoError(t, err)
	assert.Empty(t, entries)
	rec := newRecorder()
	res := wait(t, start(ctx, e, "run-none", text("where am I"), rec, nil))
	require.NoError(t, res.err)
	calls := of[wire.ToolCall](rec)
	require.NotEmpty(t, calls)
	after := calls[len(calls)-1]
	require.NotNil(t, after.Observation)
	require.NotNil(t, after.Observation.Cwd)
	assert.Equal(t, evalDir(t, scratch), evalDir(t, *after.Observation.Cwd))
	assert.Contains(t, string(after.Observation.Output), filepath.Base(scratch))
	require.NoError(t, e.Close(ctx))
	_, err = os.Stat(scratch)
	assert.True(t, os.IsNotExist(err), "the private directory is removed at Close")
}
