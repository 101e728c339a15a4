package claude

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/childproc"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// A CLI that dies in the middle of a Turn ends the Run with an error at
// once; it does not wait for a result that cannot come.
func TestRunEndsWhenTheCLIDies(t *testing.T) {
	script := `read line; echo '{"type":"system","subtype":"init"}'; echo '{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text"}}}'; exit 3`
	proc, err := childproc.Start("/bin/sh", []string{"-c", script}, os.Environ(), t.TempDir(), 1024)
	require.NoError(t, err)
	cfg := Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}.withDefaults()
	e := &executor{cfg: cfg, log: cfg.Logger, proc: proc, sessionID: "s-1"}
	e.ch = newChannel(proc.Stdout, proc.Stdin, 0, "aw-", nil, nil)
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, e.Close(ctx))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a failure bound
	defer cancel()
	turn := harness.Turn{RunID: "run-1", Declaration: harness.Declaration{Kind: Kind, Available: true, Capabilities: capabilities()},
		Input: wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: "hi"}}}}}
	_, err = e.Run(ctx, turn, func(context.Context, wire.Payload) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ended during the Turn")
	assert.NoError(t, ctx.Err(), "the Run returned by itself, not by its bound")
}
