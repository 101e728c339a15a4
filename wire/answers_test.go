package wire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The catalog's answers table (spec/catalog.yaml) is the one statement of
// which outcome may answer which request step; the machines are checked
// against it by the spec loader, and the validators must agree with it for
// every pair.
func TestAnswersFollowTheCatalog(t *testing.T) {
	t.Run("runtime_prepare_result", func(t *testing.T) {
		e, ok := Lookup(TypeRuntimePrepareResult)
		require.True(t, ok)
		for outcome, code := range map[string]string{"ready": "", "received": "", "completed": "", "rejected": "invalid_request", "failed": "runtime_preparation_failed", "unknown": "runtime_preparation_unconfirmed"} {
			for _, step := range transferSteps {
				req := RuntimePrepare{Step: step}
				r := RuntimePrepareResult{Outcome: outcome, ErrorCode: code}
				if outcome == "received" {
					r.Offset, req.Data = 1, []byte{0}
				}
				err := r.Answers(req, 0)
				require.Equalf(t, e.MayAnswer(outcome, step), err == nil, "%s answers %s: %v", outcome, step, err)
			}
		}
	})
	t.Run("workspace_write_result", func(t *testing.T) {
		e, ok := Lookup(TypeWorkspaceWriteResult)
		require.True(t, ok)
		for outcome, code := range map[string]string{"ready": "", "received": "", "completed": "", "rejected": "invalid_request", "unknown": "write_unconfirmed"} {
			for _, step := range transferSteps {
				req := WorkspaceWrite{Step: step}
				r := WorkspaceWriteResult{Outcome: outcome, ErrorCode: code}
				if outcome == "received" {
					r.Offset, req.Data = 1, []byte{0}
				}
				err := r.Answers(req, 0)
				require.Equalf(t, e.MayAnswer(outcome, step), err == nil, "%s answers %s: %v", outcome, step, err)
			}
		}
	})
	t.Run("workspace_export_result", func(t *testing.T) {
		e, ok := Lookup(TypeWorkspaceExportResult)
		require.True(t, ok)
		for outcome, code := range map[string]string{"chunk": "", "completed": "", "failed": "export_failed", "rejected": "invalid_request"} {
			for _, step := range []string{ExportBegin, ExportNext, ExportCancel} {
				r := WorkspaceExportResult{Outcome: outcome, Offset: ptr[int64](0), ErrorCode: code}
				if outcome == "chunk" {
					r.Data = []byte{0}
				}
				err := r.Answers(WorkspaceExport{Step: step})
				require.Equalf(t, e.MayAnswer(outcome, step), err == nil, "%s answers %s: %v", outcome, step, err)
			}
		}
	})
	t.Run("types without a table", func(t *testing.T) {
		e, ok := Lookup(TypeWorkspaceReadResult)
		require.True(t, ok)
		require.False(t, e.MayAnswer("completed", "begin"))
		var none *Entry
		require.False(t, none.MayAnswer("ready", StepBegin))
	})
}
