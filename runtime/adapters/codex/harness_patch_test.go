package codex

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

// outsideWritableRoots makes a directory Codex's workspace-write sandbox
// may not write without asking. That sandbox lets Codex write the
// workspace and the temporary directories unasked (measured on 0.171.0:
// an apply_patch under /tmp, even outside the workspace, applied with no
// approval), so the directory must lie outside /tmp and $TMPDIR.
func outsideWritableRoots(t *testing.T) string {
	t.Helper()
	tmp := []string{evalDir(t, os.TempDir()), evalDir(t, "/tmp")}
	var parents []string
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		parents = append(parents, "/dev/shm")
	}
	if cache, err := os.UserCacheDir(); err == nil {
		parents = append(parents, cache)
	}
	for _, parent := range parents {
		dir, err := os.MkdirTemp(parent, "agentwire-codex-patch-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		resolved := evalDir(t, dir)
		if under(resolved, tmp...) {
			continue
		}
		return resolved
	}
	t.Fatalf("no directory outside %v to edit from (tried %v): the approval of a file edit cannot be shown", tmp, parents)
	return ""
}

func under(p string, roots ...string) bool {
	for _, r := range roots {
		if rel, err := filepath.Rel(r, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// An apply_patch file edit outside the sandbox's writable roots asks for
// approval; approved, Codex writes the file, and the edit is a file_change
// tool_call whose observation lists the change with its diff.
func TestHarnessCodexApprovedFileEditIsWritten(t *testing.T) {
	target := filepath.Join(outsideWritableRoots(t), "edit.txt")
	r := newRig(t, nil, modeltest.WithTurns(modeltest.Reply(modeltest.CodexApplyPatch(modeltest.AddFilePatch(target, "patched by agentwire\n")))))
	e := r.executor(hcfg(r.a, r.ws))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	rec := newRecorder()
	ch := start(ctx, e, "run-patch", text("add the file"), rec, nil)
	f, ok := rec.await(ctx, func(p wire.Payload) bool { _, ok := p.(wire.PermissionRequest); return ok })
	require.True(t, ok, "a permission request for the edit")
	pr := f.(wire.PermissionRequest)
	assert.Equal(t, toolFileChange, pr.Tool)
	assert.Equal(t, target, pr.Detail, "the request names the file it changes")
	var payload struct {
		ItemID  string              `json:"item_id"`
		Changes []map[string]string `json:"changes"`
	}
	require.NoError(t, json.Unmarshal(pr.Payload, &payload))
	assert.Equal(t, []map[string]string{{"path": target, "kind": "add"}}, payload.Changes)
	_, err := os.Stat(target)
	require.True(t, os.IsNotExist(err), "nothing is written before the approval")

	yes := true
	require.NoError(t, e.Decide(ctx, "run-patch", harnessAnswer(pr.RequestID, &wire.PermissionDecision{DeliveryID: "d1", Approved: &yes})),
		"the approval was applied (Codex settled the request)")
	res := wait(t, ch)
	require.NoError(t, res.err)

	b, err := os.ReadFile(target)
	require.NoError(t, err, "the approved edit was written")
	assert.Equal(t, "patched by agentwire\n", string(b))

	calls := of[wire.ToolCall](rec)
	require.Len(t, calls, 2, kinds(rec))
	before, after := calls[0], calls[1]
	assert.Equal(t, wire.ToolStageBefore, before.Stage)
	assert.Equal(t, wire.ToolStageAfter, after.Stage)
	assert.Equal(t, before.ID, after.ID)
	assert.Equal(t, payload.ItemID, before.ID, "the request belongs to the edit's item")
	assert.Equal(t, toolFileChange, before.Name)
	assert.JSONEq(t, `{"changes":[{"path":`+quote(target)+`,"kind":"add"}]}`, string(before.Args))
	require.NotNil(t, after.Observation)
	assert.Equal(t, "file_change", after.Observation.Kind)
	assert.Equal(t, "completed", after.Observation.Status)
	assert.JSONEq(t, `{"changes":[{"path":`+quote(target)+`,"kind":"add","diff":"patched by agentwire\n"}]}`, string(after.Observation.Arguments))
	order := kinds(rec)
	assert.Less(t, strings.Index(order, "tool_call:before"), strings.Index(order, "permission_request"))
	assert.Less(t, strings.Index(order, "permission_request"), strings.Index(order, "tool_call:after"))

	reqs := r.srv.TurnRequests()
	require.Len(t, reqs, 2)
	tr, ok := reqs[1].LastToolResult()
	require.True(t, ok, "the model got the patch's result")
	assert.Contains(t, tr.Output, "Success")
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
