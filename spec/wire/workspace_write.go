package wire

// Refinements of a write_rejected workspace_write_result.
const (
	// WriteReasonDirectory: the destination is a directory.
	WriteReasonDirectory = "destination_directory"
	// WriteReasonUnsafe: the destination escapes the workspace or is
	// otherwise unsafe to create (a symbolic link on the way, …).
	WriteReasonUnsafe = "unsafe_destination"
)

// Finite error codes of workspace_write_result, by outcome. The E3
// assignment codes are not part of the E2 wire.
var (
	workspaceWriteRejectedCodes = []string{"invalid_request", "resource_unavailable", "write_capacity", "write_rejected", "write_unsupported"}
	workspaceWriteUnknownCodes  = []string{"write_unconfirmed"}
)

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
	Step          string         `json:"step"`
	EnvironmentID string         `json:"environment_id,omitempty"`
	SessionID     string         `json:"session_id,omitempty"`
	Path          string         `json:"path,omitempty"`
	SizeBytes     *int64         `json:"size_bytes,omitempty"`
	SHA256        string         `json:"sha256,omitempty"`
	Offset        int64          `json:"offset,omitempty"`
	Data          workspaceBytes `json:"data,omitempty"`
}

// UnmarshalJSON decodes strictly and refuses a raw payload over
// MaxChunkFrameBytes before looking at it.
func (p *WorkspaceWrite) UnmarshalJSON(data []byte) error {
	type plain WorkspaceWrite
	return workspaceUnmarshalBounded(workspaceWriteType, data, (*plain)(p))
}

// Validate checks the step; see the type's doc comment.
func (p WorkspaceWrite) Validate() error {
	c := newChecker("")
	c.oneOf("step", p.Step, StepBegin, StepChunk, StepCommit)
	if !c.ok() {
		return c.err()
	}
	if p.Step != StepBegin {
		transferNoHeader(c, p.Step,
			"environment_id", p.EnvironmentID != "",
			"session_id", p.SessionID != "",
			"path", p.Path != "",
			"size_bytes", p.SizeBytes != nil,
			"sha256", p.SHA256 != "",
		)
		transferBody(c, p.Step, p.Offset, len(p.Data))
		return c.err()
	}
	c.uuid("environment_id", p.EnvironmentID)
	c.uuid("session_id", p.SessionID)
	c.nested("path", CheckWorkspacePath(p.Path, false))
	if p.SizeBytes != nil {
		c.rangeInt("size_bytes", *p.SizeBytes, 0, MaxTransferBytes)
	}
	transferDigest(c, p.SHA256, p.SizeBytes)
	c.forbidden("offset", p.Offset != 0, "begin starts at offset 0")
	c.forbidden("data", len(p.Data) > 0, "begin carries no data; send it in chunks")
	return c.err()
}

// DriveKey is the step: "begin", "chunk" or "commit" ("" for any other).
func (p WorkspaceWrite) DriveKey() string { return transferStepKey(p.Step) }

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
	c.oneOf("outcome", r.Outcome, "ready", "received", "completed", "rejected", "unknown")
	if !c.ok() {
		return c.err()
	}
	transferResultShape(c, r.Outcome, r.Offset, r.SizeBytes)
	switch r.Outcome {
	case "rejected":
		c.oneOf("error_code", r.ErrorCode, workspaceWriteRejectedCodes...)
	case "unknown":
		c.oneOf("error_code", r.ErrorCode, workspaceWriteUnknownCodes...)
	default:
		c.forbidden("error_code", r.ErrorCode != "", "a "+r.Outcome+" receipt carries no error_code")
	}
	if r.Reason != "" {
		c.forbidden("reason", r.ErrorCode != "write_rejected", "reason refines write_rejected only")
		c.oneOf("reason", r.Reason, WriteReasonDirectory, WriteReasonUnsafe)
	}
	return c.err()
}

// DriveKey is the outcome: one of ready, received, completed, rejected and
// unknown ("" for any other).
func (r WorkspaceWriteResult) DriveKey() string {
	switch r.Outcome {
	case "ready", "received", "completed", "rejected", "unknown":
		return r.Outcome
	}
	return ""
}

// Answers validates r and checks it against the step it answers, declared
// being the size the begin declared: ready for begin, received with offset
// = the chunk's offset + its length for a chunk, completed with size_bytes
// = declared for commit; rejected and unknown may answer any step. The
// error is stamped with the message type under "payload".
func (r WorkspaceWriteResult) Answers(step WorkspaceWrite, declared int64) *FieldError {
	if err := r.Validate(); err != nil {
		return workspaceStamp(workspaceWriteResultType, err)
	}
	return transferAnswers(workspaceWriteResultType, step.Step, step.Offset, len(step.Data), declared,
		r.Outcome, r.Offset, r.SizeBytes, false)
}
