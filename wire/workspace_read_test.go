package wire

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWorkspaceReadRequestBound(t *testing.T) {
	// Checked before decoding: whitespace alone can break the bound.
	raw := []byte(`{"handle":"h","environment_id":"e","path":"a","max_bytes":1}` + strings.Repeat(" ", MaxRequestPayloadBytes))
	for _, typ := range []string{"workspace_read", "workspace_export"} {
		requireFieldError(t, CheckRawPayloadSize(typ, raw), "payload", RuleTooLarge, typ)
		require.ErrorIs(t, CheckRawPayloadSize(typ, raw), ErrTooLarge)
	}
	// Inside the bound it passes; types without a bound of their own pass.
	require.NoError(t, CheckRawPayloadSize("workspace_read", raw[:MaxRequestPayloadBytes]))
	require.NoError(t, CheckRawPayloadSize("workspace_read_result", raw))
	require.NoError(t, CheckRawPayloadSize("heartbeat", raw))

	// decodePayload refuses it too, with the same field and rule.
	padded := []byte(`{"handle":"h","environment_id":"e",` + strings.Repeat(" ", MaxRequestPayloadBytes) + `"path":"a","max_bytes":1}`)
	_, err := decodePayload[WorkspaceRead]("workspace_read", padded)
	requireFieldError(t, err, "payload", RuleTooLarge)
	_, err = decodePayload[WorkspaceExport]("workspace_export", []byte(`{"step":"cancel"`+strings.Repeat(" ", MaxRequestPayloadBytes)+`}`))
	requireFieldError(t, err, "payload", RuleTooLarge)

	// What Validate accepts, Marshal can send: the canonical encoding (which
	// escapes <, > and &) is bounded as well.
	p := WorkspaceRead{Handle: "h", EnvironmentID: "e", Path: strings.Repeat("&", 1500), MaxBytes: 1}
	requireFieldError(t, p.Validate(), "", RuleTooLarge)
	p.Path = strings.Repeat("a", 1500)
	require.NoError(t, p.Validate())
}

func TestWorkspaceReadRequest(t *testing.T) {
	byteRead := WorkspaceRead{Handle: "h", EnvironmentID: "e", Path: "a/b", MaxBytes: MaxReadBytes}
	require.NoError(t, byteRead.Validate())
	dirRead := WorkspaceRead{RunID: "r", EnvironmentID: "e", Operation: ReadDirectory, MaxEntries: MaxDirectoryEntries}
	require.NoError(t, dirRead.Validate(), "the root is listed with an empty path")

	// A directory read always sends max_bytes, as 0.
	out, err := json.Marshal(dirRead)
	require.NoError(t, err)
	require.JSONEq(t, `{"run_id":"r","environment_id":"e","operation":"directory","path":"","max_bytes":0,"max_entries":1024}`, string(out))
}

func TestWorkspaceReadResultDriveKey(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		r    WorkspaceReadResult
		want string
	}{
		{WorkspaceReadResult{Outcome: "completed", Data: []byte("x"), CloseAcknowledged: true}, "completed"},
		{WorkspaceReadResult{Outcome: "completed", Data: []byte("x"), Truncated: true, CloseAcknowledged: true}, "truncated"},
		{WorkspaceReadResult{Outcome: "completed", CloseAcknowledged: true, Directory: &WorkspaceDirectory{Entries: []WorkspaceDirectoryEntry{}, Truncated: &no}}, "completed"},
		{WorkspaceReadResult{Outcome: "completed", CloseAcknowledged: true, Directory: &WorkspaceDirectory{Entries: []WorkspaceDirectoryEntry{}, Truncated: &yes}}, "truncated"},
		{WorkspaceReadResult{Outcome: "rejected", ErrorCode: "not_found"}, "rejected"},
		{WorkspaceReadResult{Outcome: "unknown", ErrorCode: "read_unconfirmed"}, "unknown"},
		{WorkspaceReadResult{Outcome: "partial"}, ""},
		{WorkspaceReadResult{Outcome: "completed", Directory: &WorkspaceDirectory{}}, "completed"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, tc.r.DriveKey(), "%+v", tc.r)
	}
}

func TestWorkspaceReadResultAnswers(t *testing.T) {
	no := false
	byteRead := WorkspaceRead{Handle: "h", EnvironmentID: "e", Path: "a", MaxBytes: 3}
	dirRead := WorkspaceRead{Handle: "h", EnvironmentID: "e", Operation: ReadDirectory, MaxEntries: 2}
	size := int64(1)
	entries := func(n int) *WorkspaceDirectory {
		d := &WorkspaceDirectory{Entries: []WorkspaceDirectoryEntry{}, Truncated: &no}
		for i := 0; i < n; i++ {
			d.Entries = append(d.Entries, WorkspaceDirectoryEntry{Name: "e" + strconv.Itoa(i), Kind: EntryFile, SizeBytes: &size})
		}
		return d
	}
	done := func(data string, dir *WorkspaceDirectory) WorkspaceReadResult {
		return WorkspaceReadResult{Outcome: "completed", Data: []byte(data), CloseAcknowledged: true, Directory: dir}
	}
	cases := []struct {
		name  string
		req   WorkspaceRead
		r     WorkspaceReadResult
		field string // "" when it answers
		rule  Rule
	}{
		{name: "bytes within max_bytes", req: byteRead, r: done("abc", nil)},
		{name: "empty file", req: byteRead, r: done("", nil)},
		{name: "bytes over max_bytes", req: byteRead, r: done("abcd", nil), field: "payload.data", rule: RuleTooLarge},
		{name: "directory for a byte read", req: byteRead, r: done("", entries(1)), field: "payload.directory", rule: RuleForbidden},
		{name: "entries within max_entries", req: dirRead, r: done("", entries(2))},
		{name: "entries over max_entries", req: dirRead, r: done("", entries(3)), field: "payload.directory.entries", rule: RuleTooLarge},
		{name: "bytes for a directory read", req: dirRead, r: done("abc", nil), field: "payload.directory", rule: RuleRequired},
		{name: "not_directory for a directory read", req: dirRead, r: WorkspaceReadResult{Outcome: "rejected", ErrorCode: "not_directory"}},
		{name: "not_directory for a byte read", req: byteRead, r: WorkspaceReadResult{Outcome: "rejected", ErrorCode: "not_directory"}, field: "payload.error_code", rule: RuleConflict},
		{name: "unknown answers anything", req: byteRead, r: WorkspaceReadResult{Outcome: "unknown", ErrorCode: "read_unconfirmed"}},
		{name: "invalid result", req: dirRead, r: WorkspaceReadResult{Outcome: "completed", Directory: entries(1)}, field: "payload.close_acknowledged", rule: RuleRequired},
	}
	for _, tc := range cases {
		requireAnswer(t, tc.r.Answers(tc.req), "workspace_read_result", tc.field, tc.rule, tc.name)
	}
}

func TestWorkspaceReadResultLimits(t *testing.T) {
	r := WorkspaceReadResult{Outcome: "completed", Data: make([]byte, MaxReadBytes), CloseAcknowledged: true}
	require.NoError(t, r.Validate())
	r.Data = make([]byte, MaxReadBytes+1)
	requireFieldError(t, r.Validate(), "data", RuleTooLarge)
}

func TestWorkspaceUnknownMemberPath(t *testing.T) {
	cases := []struct {
		typ, raw, field string
	}{
		{"workspace_read_result", `{"outcome":"completed","close_acknowledged":true,"directory":{"entries":[{"name":"a","kind":"other","size_bytes":null},{"name":"b","kind":"other","size_bytes":null,"x":1}],"truncated":false}}`, "payload.directory.entries[1].x"},
		{"workspace_read_result", `{"outcome":"completed","close_acknowledged":true,"directory":{"entries":[],"truncated":false,"next":"c"}}`, "payload.directory.next"},
		{"runtime_prepare", `{"step":"begin","initialization":{"action":"setup","command":"x","timeout":5}}`, "payload.initialization.timeout"},
		{"runtime_prepare", `{"step":"begin","sources":{"skills":[{"type":"inline","name":"n","description":"d","path":"p"}]}}`, "payload.sources.skills[0].path"},
	}
	for _, tc := range cases {
		var err error
		switch tc.typ {
		case "workspace_read_result":
			_, err = decodePayload[WorkspaceReadResult](tc.typ, []byte(tc.raw))
		default:
			_, err = decodePayload[RuntimePrepare](tc.typ, []byte(tc.raw))
		}
		requireFieldError(t, err, tc.field, RuleUnknownField, tc.raw)
	}
}
