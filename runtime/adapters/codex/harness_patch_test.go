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

// outsideSlashTmp makes a directory outside /tmp (under /dev/shm or the
// user's cache directory), for a test that points $TMPDIR somewhere /tmp
// does not cover, so that each exclusion is shown on its own.
func outsideSlashTmp(t *testing.T) string {
	t.Helper()
	slashTmp := evalDir(t, "/tmp")
	var parents []string
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		parents = append(parents, "/dev/shm")
	}
	if cache, err := os.UserCacheDir(); err == nil {
		parents = append(parents, cache)
	}
	for _, parent := range parents {
		dir, err := os.MkdirTemp(parent, "agentwire-codex-tmpdir-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		resolved := evalDir(t, dir)
		if under(resolved, slashTmp) {
			continue
		}
		return resolved
	}
	t.Fatalf("no directory outside /tmp to point $TMPDIR at (tried %v)", parents)
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

// An apply_patch file edit outside the workspace asks for approval;
// approved, Codex writes the file, and the edit is a file_change tool_call
// whose observation lists the change with its diff. The file is in a
// temporary directory of its own: with /tmp and $TMPDIR out of the
// sandbox's writable roots, that is outside them too.
func TestHarnessCodexApprovedFileEditIsWritten(t *testing.T) {
	target := filepath.Join(evalDir(t, t.TempDir()), "edit.txt")
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

// The sandbox lets Codex write the workspace unasked and nothing else:
// an apply_patch under /tmp, and one under $TMPDIR (pointed outside /tmp
// so that each exclusion is shown on its own), each ask approval as a
// file_change permission_request and are not written when declined, while
// one in the workspace applies with no question. With Codex's default
// workspace-write both temporary files were written silently (measured on
// 0.171.0).
func TestHarnessCodexUnaskedWritesStayInTheWorkspace(t *testing.T) {
	tmpdir := outsideSlashTmp(t)
	t.Setenv("TMPDIR", tmpdir) // the app-server inherits it
	slashTmp, err := os.MkdirTemp("/tmp", "agentwire-codex-tmp-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(slashTmp) })
	underSlashTmp := filepath.Join(evalDir(t, slashTmp), "edit.txt")
	underTmpdir := filepath.Join(tmpdir, "edit.txt")

	r := newRig(t, nil)
	inWorkspace := filepath.Join(evalDir(t, r.ws), "edit.txt")
	r.srv.Enqueue(
		modeltest.Reply(modeltest.CodexApplyPatch(modeltest.AddFilePatch(underSlashTmp, "into /tmp\n"))),
		modeltest.Reply(modeltest.CodexApplyPatch(modeltest.AddFilePatch(underTmpdir, "into $TMPDIR\n"))),
		modeltest.Reply(modeltest.CodexApplyPatch(modeltest.AddFilePatch(inWorkspace, "into the workspace\n"))),
		modeltest.Reply(modeltest.Text("Done.")),
	)
	e := r.executor(hcfg(r.a, r.ws))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	rec := newRecorder()
	ch := start(ctx, e, "run-tmp", text("write three files"), rec, nil)
	// A Run that ends without asking ends the wait for the question too, so
	// a sandbox that lets the edit through fails here at once.
	ended := make(chan runResult, 1)
	askCtx, askCancel := context.WithCancel(ctx)
	defer askCancel()
	go func() {
		res := <-ch
		askCancel()
		ended <- res
	}()

	no := false
	for i, target := range []string{underSlashTmp, underTmpdir} {
		_, ok := rec.await(askCtx, func(wire.Payload) bool { return len(of[wire.PermissionRequest](rec)) > i })
		if !ok {
			_, err := os.Stat(target)
			require.Failf(t, "no permission request", "for the edit of %s (written unasked: %t); frames: %s", target, err == nil, kinds(rec))
		}
		pr := of[wire.PermissionRequest](rec)[i]
		assert.Equal(t, toolFileChange, pr.Tool)
		assert.Equal(t, target, pr.Detail, "the request names the file it changes")
		_, err := os.Stat(target)
		require.True(t, os.IsNotExist(err), "nothing is written under %s before an answer", target)
		require.NoError(t, e.Decide(ctx, "run-tmp", harnessAnswer(pr.RequestID, &wire.PermissionDecision{DeliveryID: "d" + pr.RequestID, Approved: &no})))
	}
	res := wait(t, ended)
	require.NoError(t, res.err)
	assert.Equal(t, "Done.", res.done.Content)
	assert.Len(t, of[wire.PermissionRequest](rec), 2, "the workspace edit asked nothing: %s", kinds(rec))

	for _, target := range []string{underSlashTmp, underTmpdir} {
		_, err := os.Stat(target)
		assert.True(t, os.IsNotExist(err), "the declined edit of %s was not written", target)
	}
	b, err := os.ReadFile(inWorkspace)
	require.NoError(t, err, "the workspace edit was written unasked")
	assert.Equal(t, "into the workspace\n", string(b))
}
