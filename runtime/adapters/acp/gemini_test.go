package acp

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestThoughtTextDropsAnEmptySubject(t *testing.T) {
	assert.Equal(t, "Let me think.", thoughtText("****\nLet me think."), "Gemini CLI's header of a thought without a subject")
	assert.Equal(t, "**Planning**\nthe steps", thoughtText("**Planning**\nthe steps"), "a real subject stays")
	assert.Equal(t, "plain", thoughtText("plain"))
}

// The saved recording is renamed out of the file name a same-minute
// session/load would append to; other sessions' files are left alone.
func TestGeminiBeforeLoadKeepsTheSavedSession(t *testing.T) {
	home := t.TempDir()
	chats := filepath.Join(home, ".gemini", "tmp", "proj", "chats")
	require.NoError(t, os.MkdirAll(chats, 0o700))
	saved := filepath.Join(chats, "session-2026-12-03T16-34-11e2793c.jsonl")
	other := filepath.Join(chats, "session-2026-12-03T16-34-90927f87.jsonl")
	for _, f := range []string{saved, other} {
		require.NoError(t, os.WriteFile(f, []byte(`{"sessionId":"x"}`+"\n"), 0o600))
	}
	require.NoError(t, geminiBeforeLoad(home, "11e2793c-1faf-4df4-a3e0-1fb5c7ad006c"))
	_, err := os.Stat(saved)
	assert.True(t, os.IsNotExist(err), "the saved file no longer has the name a new recording takes")
	kept, err := filepath.Glob(filepath.Join(chats, "session-2026-12-03T16-34-11e2793c-kept*.jsonl"))
	require.NoError(t, err)
	assert.Len(t, kept, 1, "it is kept under a name Gemini CLI still lists (session-*.jsonl)")
	assert.FileExists(t, other)
	assert.Error(t, geminiBeforeLoad(home, "../x"), "not a session ID")
}

// A replay is settled once it was seen and went quiet; one never seen
// waits for the context.
func TestReplayClockSettles(t *testing.T) {
	var r replayClock
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, r.settle(ctx, 10*time.Millisecond), context.DeadlineExceeded, "nothing replayed yet")
	r.seen()
	ctx2, cancel2 := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel2()
	require.NoError(t, r.settle(ctx2, 10*time.Millisecond))
}
