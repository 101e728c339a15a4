package wire

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWorkspaceExportResultChunk(t *testing.T) {
	r := WorkspaceExportResult{Outcome: "chunk", Offset: ptr[int64](0), Data: bytes.Repeat([]byte{1}, ChunkBytes)}
	require.NoError(t, r.Validate())
	r.Data = append(r.Data, 1)
	requireFieldError(t, r.Validate(), "data", RuleTooLarge)
	r = WorkspaceExportResult{Outcome: "completed", Offset: ptr[int64](MaxExportBytes)}
	require.NoError(t, r.Validate(), "an archive may reach MaxExportBytes exactly")
}

func TestWorkspaceExportResultAnswers(t *testing.T) {
	begin := WorkspaceExport{Step: ExportBegin, Handle: "h", EnvironmentID: "e"}
	next := WorkspaceExport{Step: ExportNext, Offset: 1024}
	cancel := WorkspaceExport{Step: ExportCancel}
	at := func(outcome string, off int64, data, code string) WorkspaceExportResult {
		return WorkspaceExportResult{Outcome: outcome, Offset: &off, Data: []byte(data), ErrorCode: code}
	}
	cases := []struct {
		name  string
		req   WorkspaceExport
		r     WorkspaceExportResult
		field string
		rule  Rule
	}{
		{name: "first chunk", req: begin, r: at("chunk", 0, "x", "")},
		{name: "empty archive", req: begin, r: at("completed", 0, "", "")},
		{name: "first chunk elsewhere", req: begin, r: at("chunk", 5, "x", ""), field: "payload.offset", rule: RuleConflict},
		{name: "next chunk", req: next, r: at("chunk", 1024, "x", "")},
		{name: "completed at the offset", req: next, r: at("completed", 1024, "", "")},
		{name: "completed elsewhere", req: next, r: at("completed", 2048, "", ""), field: "payload.offset", rule: RuleConflict},
		{name: "failed on a wrong offset reports its own", req: next, r: at("failed", 512, "", "invalid_request")},
		{name: "rejected", req: begin, r: at("rejected", 0, "", "resource_unavailable")},
		{name: "cancel of a stale export", req: cancel, r: at("rejected", 0, "", "resource_unavailable")},
		{name: "cancel answered by a chunk", req: cancel, r: at("chunk", 0, "x", ""), field: "payload.outcome", rule: RuleConflict},
		{name: "invalid result", req: next, r: WorkspaceExportResult{Outcome: "completed"}, field: "payload.offset", rule: RuleRequired},
	}
	for _, tc := range cases {
		requireAnswer(t, tc.r.Answers(tc.req), "workspace_export_result", tc.field, tc.rule, tc.name)
	}
}
