package wire

import (
	"reflect"
	"strconv"
)

// Refinements of a write_rejected workspace_write_result.
//
// decision: the list is open. A reason this package does not know (a newer
// reference's, say) is kept as the generic write_rejected it refines,
// within MaxWriteReasonBytes: refusing the receipt would turn a definite
// rejection, which releases the mutation, into an unknown outcome, which
// keeps it blocked (daemon-protocol.txt:185). Use KnownReason to act on it.
const (
	// WriteReasonDirectory: the destination is a directory.
	WriteReasonDirectory = "destination_directory"
	// WriteReasonUnsafe: the destination escapes the workspace or is
	// otherwise unsafe to create (a symbolic link on the way, …).
	WriteReasonUnsafe = "unsafe_destination"
	// MaxWriteReasonBytes bounds the reason of a write_rejected receipt.
	MaxWriteReasonBytes = 128
)

// workspaceWriteReceipts are the outcomes of workspace_write_result and the
// finite error codes of each refusal. A write never fails: it is rejected
// or unknown. The E3 assignment codes are not part of the E2 wire.
var workspaceWriteReceipts = transferReceipts{
	outcomes: []string{"ready", "received", "completed", "rejected", "unknown"},
	codes: outcomeCodes{
		"rejected": {"invalid_request", "resource_unavailable", "write_capacity", "write_rejected", "write_unsupported"},
		"unknown":  {"write_unconfirmed"},
	},
}

// WorkspaceWrite is one step of a bounded file write. begin names the
// target (Environment and Session, a workspace-relative file path) and
// declares the body's size and SHA-256; each chunk carries the next bytes
// at the offset received so far; commit asks the Runtime to verify the
// digest and install the file. Nothing reaches the installer before an
// exact commit, and the write runs no model.
//
// size_bytes is a pointer so that it is refused on chunk and commit
// whenever present; on begin an absent size means an empty file (the
// reference omits zero), whose digest must then be that of zero bytes.
// The envelope id is Core's durable mutation ID, never a retry key.
type WorkspaceWrite struct {
	Step          string     `json:"step"`
	EnvironmentID string     `json:"environment_id,omitempty"`
	SessionID     string     `json:"session_id,omitempty"`
	Path          string     `json:"path,omitempty"`
	SizeBytes     *int64     `json:"size_bytes,omitempty"`
	SHA256        string     `json:"sha256,omitempty"`
	Offset        int64      `json:"offset,omitempty"`
	Data          base64Data `json:"data,omitempty"`
}

// UnmarshalJSON decodes strictly and refuses a raw payload over
// MaxChunkFrameBytes before looking at it.
func (p *WorkspaceWrite) UnmarshalJSON(data []byte) error {
	type plain WorkspaceWrite
	if len(data) <= MaxChunkFrameBytes {
		if off, d, ok := decodeChunkStep(data); ok { // chunk_decode.go
			*p = WorkspaceWrite{Step: StepChunk, Offset: off, Data: d}
			return nil
		}
	}
	if len(data) <= MaxChunkFrameBytes && checkJSON(data, schemaFor(reflect.TypeFor[plain]())) == nil {
		if v, ok := decodeWriteStep(data); ok {
			*p = v
			return nil
		}
	}
	return decodeBounded(TypeWorkspaceWrite, data, (*plain)(p))
}

// decodeWriteStep decodes a step that checkJSON already accepted against
// the schema (valid, known members only, none twice, each of its JSON
// kind) when every member is plain: strings without escapes, integers
// strconv reads, data of plain base64. It reports false for anything else,
// which encoding/json then decodes (and words any error of) exactly as
// before: the common frame, a 64 KiB chunk, is read once here instead of
// three more times by encoding/json.
func decodeWriteStep(data []byte) (WorkspaceWrite, bool) {
	var p WorkspaceWrite
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return p, false
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return p, true
	}
	for i < len(data) {
		kEnd, esc, closed := scanString(data, i)
		if esc || !closed {
			return p, false
		}
		key := data[i+1 : kEnd-1]
		i = skipSpace(data, kEnd)
		if i >= len(data) || data[i] != ':' {
			return p, false
		}
		vs := skipSpace(data, i+1)
		ve, res := skipValue(data, vs)
		if res != skipOK {
			return p, false
		}
		v := data[vs:ve]
		str := func(dst *string) bool {
			if len(v) < 2 || v[0] != '"' {
				return false
			}
			if _, e, _ := scanString(v, 0); e {
				return false
			}
			*dst = string(v[1 : len(v)-1])
			return true
		}
		ok := false
		switch string(key) {
		case "step":
			ok = str(&p.Step)
		case "environment_id":
			ok = str(&p.EnvironmentID)
		case "session_id":
			ok = str(&p.SessionID)
		case "path":
			ok = str(&p.Path)
		case "sha256":
			ok = str(&p.SHA256)
		case "size_bytes":
			n, err := strconv.ParseInt(string(v), 10, 64)
			p.SizeBytes, ok = &n, err == nil
		case "offset":
			n, err := strconv.ParseInt(string(v), 10, 64)
			p.Offset, ok = n, err == nil
		case "data":
			ok = p.Data.UnmarshalJSON(v) == nil && v[0] == '"'
		}
		if !ok {
			return p, false
		}
		i = skipSpace(data, ve)
		if i < len(data) && data[i] == '}' {
			return p, skipSpace(data, i+1) == len(data)
		}
		if i >= len(data) || data[i] != ',' {
			return p, false
		}
		i = skipSpace(data, i+1)
	}
	return p, false
}

// Validate checks the step; see the type's doc comment.
func (p WorkspaceWrite) Validate() error {
	c := newChecker("")
	p.transfer().validate(c, func() {
		c.nested("path", CheckWorkspacePath(p.Path, false))
		if p.SizeBytes != nil {
			c.rangeInt("size_bytes", *p.SizeBytes, 0, MaxTransferBytes)
		}
		transferDigest(c, p.SHA256, p.SizeBytes)
	})
	return c.err()
}

// transfer is the step as a transfer: the shared members, and the
// begin-only members of workspace_write in field order.
func (p WorkspaceWrite) transfer() transferStep {
	return transferStep{
		step: p.Step, environmentID: p.EnvironmentID, sessionID: p.SessionID,
		header: []transferMember{
			{"path", p.Path != ""},
			{"size_bytes", p.SizeBytes != nil},
			{"sha256", p.SHA256 != ""},
		},
		offset: p.Offset, data: len(p.Data),
	}
}

// DriveKey is the step: "begin", "chunk" or "commit" ("" for any other).
func (p WorkspaceWrite) DriveKey() string { return driveKeyIn(p.Step, transferSteps) }

// WorkspaceWriteResult is the receipt of one workspace_write step: ready
// for begin, received(offset = bytes staged so far) for a chunk,
// completed(size_bytes = the declared size) for commit once the file was
// installed, or a rejection or unknown outcome with a finite error code.
// reason may refine write_rejected only. An exact commit or rejection
// receipt releases the mutation; unknown keeps the uncertainty.
type WorkspaceWriteResult struct {
	Outcome   string `json:"outcome"`
	Offset    int64  `json:"offset,omitempty"`
	SizeBytes int64  `json:"size_bytes,omitempty"`
	ErrorCode string `json:"error_code,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// Validate checks the receipt on its own; Answers also checks it against
// the step it answers.
func (r WorkspaceWriteResult) Validate() error {
	c := newChecker("")
	if !workspaceWriteReceipts.validate(c, r.Outcome, r.Offset, r.SizeBytes, r.ErrorCode) {
		return c.err()
	}
	if r.Reason != "" {
		c.forbidden("reason", r.ErrorCode != "write_rejected", "reason refines write_rejected only")
		c.maxBytes("reason", r.Reason, MaxWriteReasonBytes)
	}
	return c.err()
}

// KnownReason returns the receipt's reason when it is one of the reasons
// this package defines, and "" for none or an unknown one (a generic
// write_rejected).
func (r WorkspaceWriteResult) KnownReason() string {
	switch r.Reason {
	case WriteReasonDirectory, WriteReasonUnsafe:
		return r.Reason
	}
	return ""
}

// DriveKey is the outcome: one of ready, received, completed, rejected and
// unknown ("" for any other).
func (r WorkspaceWriteResult) DriveKey() string {
	return driveKeyIn(r.Outcome, workspaceWriteReceipts.outcomes)
}

// Answers validates r and checks it against the step it answers, declared
// being the size the begin declared: ready for begin, received with offset
// = the chunk's offset + its length for a chunk, completed with size_bytes
// = declared for commit; rejected and unknown may answer any step. The
// error is stamped with the message type under "payload".
func (r WorkspaceWriteResult) Answers(step WorkspaceWrite, declared int64) *FieldError {
	if err := r.Validate(); err != nil {
		return payloadError(TypeWorkspaceWriteResult, err)
	}
	return step.transfer().answeredBy(TypeWorkspaceWriteResult, declared, r.Outcome, r.Offset, r.SizeBytes)
}
