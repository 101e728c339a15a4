package gateway_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
)

func TestWritesThroughTheRealRuntime(t *testing.T) {
	e := newEnv(t, true)
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "taken"), 0o755))
	e.realRuntime("dev-rt", dir)
	ses := e.localSession("real", script.Kind)
	ctx := context.Background()

	body := bytes.Repeat([]byte("0123456789abcdef"), 150<<10/16+3) // three chunks and a bit
	var seen []int64
	res, err := e.gw.WriteWorkspace(ctx, ses, "notes/deep/big.bin", body, gateway.WriteOptions{Progress: func(staged, total int64) {
		assert.Equal(t, int64(len(body)), total)
		seen = append(seen, staged)
	}})
	require.NoError(t, err)
	assert.Equal(t, "completed", res.Outcome)
	assert.Equal(t, int64(len(body)), res.SizeBytes)
	assert.Equal(t, []int64{64 << 10, 128 << 10, int64(len(body))}, seen, "each chunk's received offset")
	got, err := os.ReadFile(filepath.Join(dir, "notes", "deep", "big.bin"))
	require.NoError(t, err)
	assert.Equal(t, body, got)
	w, err := e.store.GetWorkspaceWrite(ctx, res.MutationID)
	require.NoError(t, err)
	assert.Equal(t, "completed", w.Outcome, "the exact receipt released the owner")
	assert.Equal(t, "dev-rt", w.DeviceID)

	// A rejection is exact too: it keeps its code and reason and frees the
	// Session for the next write.
	res, err = e.gw.WriteWorkspace(ctx, ses, "taken", []byte("x"), gateway.WriteOptions{})
	require.NoError(t, err)
	assert.Equal(t, "rejected", res.Outcome)
	assert.Equal(t, "write_rejected", res.ErrorCode)
	assert.Equal(t, "destination_directory", res.Reason)
	w, err = e.store.GetWorkspaceWrite(ctx, res.MutationID)
	require.NoError(t, err)
	assert.Equal(t, "rejected", w.Outcome)
	assert.Equal(t, "destination_directory", w.Reason)

	res, err = e.gw.WriteWorkspace(ctx, ses, "empty.txt", nil, gateway.WriteOptions{})
	require.NoError(t, err)
	assert.Equal(t, "completed", res.Outcome, "an empty body is begin and commit")
	info, err := os.Stat(filepath.Join(dir, "empty.txt"))
	require.NoError(t, err)
	assert.Zero(t, info.Size())
}

func TestAnUnknownWriteBlocksSuccessorsUntilResolved(t *testing.T) {
	e := newEnv(t, true)
	dir := t.TempDir()
	e.realRuntime("dev-rt", dir)
	ses := e.localSession("real", script.Kind)
	ctx := context.Background()
	// A write an earlier process left after its commit attempt.
	require.NoError(t, e.store.ReserveWorkspaceWrite(ctx, store.WorkspaceWrite{MutationID: "0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f", SessionID: ses,
		Path: "f.txt", CreatedAt: e.clock.Now(), WriteDetail: store.WriteDetail{State: store.WriteStateUnknown}}))

	_, err := e.gw.WriteWorkspace(ctx, ses, "g.txt", []byte("next"), gateway.WriteOptions{})
	var blocked *gateway.WriteBlockedError
	require.ErrorAs(t, err, &blocked)
	assert.Equal(t, "0b1c2d3e-4f50-4617-8829-3a4b5c6d7e8f", blocked.MutationID)
	assert.NoFileExists(t, filepath.Join(dir, "g.txt"))

	_, err = e.gw.ResolveWrite(ctx, blocked.MutationID, "maybe", "")
	assert.ErrorIs(t, err, store.ErrInvalid)
	w, err := e.gw.ResolveWrite(ctx, blocked.MutationID, store.ResolutionNotApplied, "checked the workspace")
	require.NoError(t, err)
	assert.Equal(t, store.WriteResolved, w.Outcome)
	_, err = e.gw.ResolveWrite(ctx, blocked.MutationID, store.ResolutionApplied, "")
	assert.ErrorIs(t, err, store.ErrStale, "resolved once")

	res, err := e.gw.WriteWorkspace(ctx, ses, "g.txt", []byte("next"), gateway.WriteOptions{})
	require.NoError(t, err)
	assert.Equal(t, "completed", res.Outcome)
	assert.FileExists(t, filepath.Join(dir, "g.txt"))
}
