package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWorkspaceWriteDriveKeys(t *testing.T) {
	for _, s := range []string{"begin", "chunk", "commit"} {
		require.Equal(t, s, WorkspaceWrite{Step: s}.DriveKey())
	}
	require.Equal(t, "", WorkspaceWrite{Step: "append"}.DriveKey())
	for _, o := range []string{"ready", "received", "completed", "rejected", "unknown"} {
		require.Equal(t, o, WorkspaceWriteResult{Outcome: o}.DriveKey())
	}
	require.Equal(t, "", WorkspaceWriteResult{Outcome: "failed"}.DriveKey(), "a write never fails; it is rejected or unknown")
}

func TestWorkspaceWriteBegin(t *testing.T) {
	p := WorkspaceWrite{Step: StepBegin, EnvironmentID: workspaceTestEnv, SessionID: workspaceTestSession, Path: "a/b.txt", SizeBytes: ptr[int64](5), SHA256: workspaceTestSHA}
	require.NoError(t, p.Validate())
	p.SizeBytes = ptr[int64](MaxTransferBytes)
	require.NoError(t, p.Validate(), "the private bound, not the public 5 MiB one")
	p.Path = ""
	requireFieldError(t, p.Validate(), "path", RuleRequired, "the workspace root is not a file")
	p.Path = "/workspace/a"
	requireFieldError(t, p.Validate(), "path", RuleFormat, "runtime_prepare's logical form is not a write path")
}

func TestWorkspaceWriteResultAnswers(t *testing.T) {
	begin := WorkspaceWrite{Step: StepBegin}
	chunk := WorkspaceWrite{Step: StepChunk, Offset: ChunkBytes, Data: []byte("abc")}
	commit := WorkspaceWrite{Step: StepCommit}
	cases := []struct {
		name     string
		step     WorkspaceWrite
		declared int64
		r        WorkspaceWriteResult
		field    string
		rule     Rule
	}{
		{name: "ready", step: begin, r: WorkspaceWriteResult{Outcome: "ready"}},
		{name: "completed answers begin", step: begin, r: WorkspaceWriteResult{Outcome: "completed"}, field: "payload.outcome", rule: RuleConflict},
		{name: "received", step: chunk, r: WorkspaceWriteResult{Outcome: "received", Offset: ChunkBytes + 3}},
		{name: "received short", step: chunk, r: WorkspaceWriteResult{Outcome: "received", Offset: ChunkBytes}, field: "payload.offset", rule: RuleConflict},
		{name: "completed", step: commit, declared: ChunkBytes + 3, r: WorkspaceWriteResult{Outcome: "completed", SizeBytes: ChunkBytes + 3}},
		{name: "completed short", step: commit, declared: ChunkBytes + 3, r: WorkspaceWriteResult{Outcome: "completed", SizeBytes: 3}, field: "payload.size_bytes", rule: RuleConflict},
		{name: "rejected with a reason", step: commit, r: WorkspaceWriteResult{Outcome: "rejected", ErrorCode: "write_rejected", Reason: WriteReasonUnsafe}},
		{name: "unknown", step: commit, r: WorkspaceWriteResult{Outcome: "unknown", ErrorCode: "write_unconfirmed"}},
		{name: "unknown answers a chunk", step: chunk, r: WorkspaceWriteResult{Outcome: "unknown", ErrorCode: "write_unconfirmed"}, field: "payload.outcome", rule: RuleConflict},
		{name: "invalid receipt", step: commit, r: WorkspaceWriteResult{Outcome: "unknown"}, field: "payload.error_code", rule: RuleRequired},
	}
	for _, tc := range cases {
		requireAnswer(t, tc.r.Answers(tc.step, tc.declared), "workspace_write_result", tc.field, tc.rule, tc.name)
	}
}
