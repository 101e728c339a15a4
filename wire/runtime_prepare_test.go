package wire

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	workspaceTestEnv     = "3f1c2a4e-8b7d-4c6a-9e2f-1a2b3c4d5e6f"
	workspaceTestSession = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
	workspaceTestSHA     = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
)

func TestRuntimePrepareChunkBounds(t *testing.T) {
	chunk := func(offset int64, n int) RuntimePrepare {
		return RuntimePrepare{Step: StepChunk, Offset: offset, Data: bytes.Repeat([]byte{7}, n)}
	}
	require.NoError(t, chunk(0, 1).Validate())
	require.NoError(t, chunk(0, ChunkBytes).Validate())
	require.NoError(t, chunk(MaxTransferBytes-ChunkBytes, ChunkBytes).Validate())
	requireFieldError(t, chunk(0, ChunkBytes+1).Validate(), "data", RuleTooLarge)
	requireFieldError(t, chunk(MaxTransferBytes-ChunkBytes+1, ChunkBytes).Validate(), "data", RuleTooLarge)
	requireFieldError(t, chunk(MaxTransferBytes+1, 1).Validate(), "offset", RuleRange)

	// A full chunk decodes; its encoded frame stays well under the bound.
	raw := []byte(`{"step":"chunk","offset":65536,"data":"` + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, ChunkBytes)) + `"}`)
	p, err := decodePayload[RuntimePrepare]("runtime_prepare", raw)
	require.NoError(t, err)
	require.Len(t, p.Data, ChunkBytes)
	require.Equal(t, "chunk", p.DriveKey())
}

func TestRuntimePrepareRawBound(t *testing.T) {
	// Whitespace is enough to break the raw bound: the receiver refuses
	// what it would have to parse, before parsing it.
	raw := []byte(`{"step":"commit"` + strings.Repeat(" ", MaxRuntimePrepareFrameBytes) + `}`)
	requireFieldError(t, CheckRawPayloadSize("runtime_prepare", raw), "payload", RuleTooLarge)
	require.ErrorIs(t, CheckRawPayloadSize("runtime_prepare", raw), ErrTooLarge)
	_, err := decodePayload[RuntimePrepare]("runtime_prepare", raw)
	requireFieldError(t, err, "payload", RuleTooLarge)
	require.NoError(t, CheckRawPayloadSize("runtime_prepare", []byte(`{"step":"commit"}`)))
}

func TestRuntimePrepareBeginEncodedBound(t *testing.T) {
	// Every variable is valid, but together they make a begin frame over
	// MaxRuntimePrepareFrameBytes: the whole payload is refused.
	env := map[string]string{}
	for i := 0; i < MaxInitializationItems; i++ {
		env["V"+strconv.Itoa(i)] = strings.Repeat("x", 1100)
	}
	p := RuntimePrepare{Step: StepBegin, EnvironmentID: workspaceTestEnv, SessionID: workspaceTestSession, Action: PrepareInitialize,
		Initialization: &RuntimePrepareInitialization{Action: "configure", Env: env}}
	requireFieldError(t, p.Validate(), "", RuleTooLarge)

	for k := range env {
		env[k] = "x"
	}
	require.NoError(t, p.Validate())
	delete(env, "V0")
	env["BAD=NAME"] = "x"
	requireFieldError(t, p.Validate(), "initialization.env.BAD=NAME", RuleFormat)
}

func TestRuntimePrepareMetadataMatchesAction(t *testing.T) {
	meta := &RuntimePrepareMetadata{Type: "inline", Name: "n", Description: "d"}
	base := RuntimePrepare{Step: StepBegin, EnvironmentID: workspaceTestEnv, SessionID: workspaceTestSession,
		SizeBytes: ptr[int64](5), SHA256: workspaceTestSHA}
	cases := []struct {
		name        string
		p           func(p *RuntimePrepare)
		field       string
		rule        Rule
		valid       bool
		description string
	}{
		{name: "skill", p: func(p *RuntimePrepare) { p.Action, p.Skill = PrepareSkill, meta }, valid: true},
		{name: "plugin without slot is slot 0", p: func(p *RuntimePrepare) { p.Action, p.Plugin = PreparePlugin, meta }, valid: true},
		{name: "plugin in the last slot", p: func(p *RuntimePrepare) {
			p.Action, p.Plugin, p.Slot = PreparePlugin, meta, ptr[int64](MaxPluginSlot)
		}, valid: true},
		{name: "skill object on a plugin", p: func(p *RuntimePrepare) { p.Action, p.Plugin, p.Skill = PreparePlugin, meta, meta }, field: "skill", rule: RuleForbidden},
		{name: "plugin without its object", p: func(p *RuntimePrepare) { p.Action, p.Skill = PreparePlugin, meta }, field: "skill", rule: RuleForbidden},
		{name: "file without its object", p: func(p *RuntimePrepare) { p.Action = PrepareFile }, field: "file", rule: RuleRequired},
		{name: "initialize without its object", p: func(p *RuntimePrepare) { p.Action, p.SizeBytes, p.SHA256 = PrepareInitialize, nil, "" }, field: "initialization", rule: RuleRequired},
		{name: "finalize with a file", p: func(p *RuntimePrepare) {
			p.Action, p.SizeBytes, p.SHA256, p.Sources, p.File = PrepareFinalize, nil, "", &RuntimePrepareSources{}, &RuntimePrepareFile{Path: "/workspace/a"}
		}, field: "file", rule: RuleForbidden},
		{name: "empty file declared by size 0", p: func(p *RuntimePrepare) {
			p.Action, p.File, p.SizeBytes, p.SHA256 = PrepareFile, &RuntimePrepareFile{Path: "/workspace/a"}, ptr[int64](0), emptySHA256
		}, valid: true},
	}
	for _, tc := range cases {
		p := base
		tc.p(&p)
		err := p.Validate()
		if tc.valid {
			require.NoError(t, err, tc.name)
			require.Equal(t, "begin", p.DriveKey())
			continue
		}
		requireFieldError(t, err, tc.field, tc.rule, tc.name)
	}
}

func TestCheckLogicalPath(t *testing.T) {
	cases := []struct {
		path string
		root bool
		rule Rule // "" when valid
	}{
		{path: "/workspace/a", rule: ""},
		{path: "/workspace/a/b c/ü", rule: ""},
		{path: "/workspace", root: true, rule: ""},
		{path: "/workspace", rule: RuleFormat},
		{path: "", rule: RuleRequired},
		{path: "workspace/a", rule: RuleFormat},
		{path: "/workspace/", root: true, rule: RuleFormat},
		{path: "/workspace/a/", rule: RuleFormat},
		{path: "/workspace//a", rule: RuleFormat},
		{path: "/workspace/./a", rule: RuleFormat},
		{path: "/workspace/../etc", rule: RuleFormat},
		{path: "/workspaces/a", rule: RuleFormat},
		{path: "/etc/passwd", rule: RuleFormat},
		{path: "/workspace/a\\b", rule: RuleFormat},
		{path: "/workspace/a\nb", rule: RuleFormat},
		{path: "/workspace/\xff", rule: RuleFormat},
		{path: "/workspace/" + strings.Repeat("a", MaxPathBytes), rule: RuleTooLarge},
	}
	for _, tc := range cases {
		err := CheckLogicalPath(tc.path, tc.root)
		if tc.rule == "" {
			require.NoError(t, err, tc.path)
			continue
		}
		requireFieldError(t, err, "", tc.rule, tc.path)
	}
	// The two path rules never accept each other's form.
	require.Error(t, CheckWorkspacePath("/workspace/a", false))
	require.Error(t, CheckLogicalPath("a", false))
}

func TestRuntimePrepareDriveKeys(t *testing.T) {
	for _, s := range []string{"begin", "chunk", "commit"} {
		require.Equal(t, s, RuntimePrepare{Step: s}.DriveKey())
	}
	require.Equal(t, "", RuntimePrepare{Step: "start"}.DriveKey())
	for _, o := range []string{"ready", "received", "completed", "rejected", "failed", "unknown"} {
		require.Equal(t, o, RuntimePrepareResult{Outcome: o}.DriveKey())
	}
	require.Equal(t, "", RuntimePrepareResult{Outcome: "installed"}.DriveKey())
}

func TestRuntimePrepareResultAnswers(t *testing.T) {
	begin := RuntimePrepare{Step: StepBegin}
	chunk := RuntimePrepare{Step: StepChunk, Offset: 10, Data: []byte("hello")}
	commit := RuntimePrepare{Step: StepCommit}
	cases := []struct {
		name     string
		step     RuntimePrepare
		declared int64
		r        RuntimePrepareResult
		field    string // "" when it answers
		rule     Rule
	}{
		{name: "ready answers begin", step: begin, r: RuntimePrepareResult{Outcome: "ready"}},
		{name: "received answers begin", step: begin, r: RuntimePrepareResult{Outcome: "received", Offset: 5}, field: "payload.outcome", rule: RuleConflict},
		{name: "received at the bytes received", step: chunk, r: RuntimePrepareResult{Outcome: "received", Offset: 15}},
		{name: "received at another offset", step: chunk, r: RuntimePrepareResult{Outcome: "received", Offset: 14}, field: "payload.offset", rule: RuleConflict},
		{name: "completed answers a chunk", step: chunk, declared: 15, r: RuntimePrepareResult{Outcome: "completed", SizeBytes: 15}, field: "payload.outcome", rule: RuleConflict},
		{name: "completed with the declared size", step: commit, declared: 15, r: RuntimePrepareResult{Outcome: "completed", SizeBytes: 15}},
		{name: "completed initialization", step: commit, r: RuntimePrepareResult{Outcome: "completed"}},
		{name: "completed with another size", step: commit, declared: 15, r: RuntimePrepareResult{Outcome: "completed", SizeBytes: 14}, field: "payload.size_bytes", rule: RuleConflict},
		{name: "rejected answers begin", step: begin, r: RuntimePrepareResult{Outcome: "rejected", ErrorCode: "runtime_preparation_capacity"}},
		{name: "unknown answers commit", step: commit, r: RuntimePrepareResult{Outcome: "unknown", ErrorCode: "runtime_preparation_unconfirmed"}},
		{name: "unknown answers a chunk", step: chunk, r: RuntimePrepareResult{Outcome: "unknown", ErrorCode: "runtime_preparation_unconfirmed"}, field: "payload.outcome", rule: RuleConflict},
		{name: "failed answers commit", step: commit, r: RuntimePrepareResult{Outcome: "failed", ErrorCode: "runtime_preparation_failed", ExitCode: ptr[int64](1)}},
		{name: "failed answers a chunk", step: chunk, r: RuntimePrepareResult{Outcome: "failed", ErrorCode: "runtime_preparation_failed"}, field: "payload.outcome", rule: RuleConflict},
		{name: "invalid receipt", step: begin, r: RuntimePrepareResult{Outcome: "rejected"}, field: "payload.error_code", rule: RuleRequired},
		{name: "receipt for no step", step: RuntimePrepare{Step: "start"}, r: RuntimePrepareResult{Outcome: "ready"}, field: "payload.outcome", rule: RuleConflict},
	}
	for _, tc := range cases {
		requireAnswer(t, tc.r.Answers(tc.step, tc.declared), "runtime_prepare_result", tc.field, tc.rule, tc.name)
	}
}

func TestTransferDataIsBytes(t *testing.T) {
	// The data member converts to and from []byte without ceremony.
	b := []byte("abc")
	p := RuntimePrepare{Step: StepChunk, Data: b}
	var back []byte = p.Data
	require.Equal(t, b, back)

	// Empty data decodes as absent, so a re-encoded frame decodes the same.
	got, err := decodePayload[WorkspaceWrite]("workspace_write", []byte(`{"step":"commit","data":""}`))
	require.NoError(t, err)
	require.Nil(t, got.Data)
}
