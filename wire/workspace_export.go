package wire

import "strconv"

// Steps of a workspace export.
const (
	ExportBegin  = "begin"
	ExportNext   = "next"
	ExportCancel = "cancel"
)

// Finite error codes of workspace_export_result, by outcome. A rejection
// refuses to start (or addresses no export); a failure ends a started one,
// with invalid_request when a next named the wrong offset. A chunk or a
// completed result carries none.
var workspaceExportCodes = outcomeCodes{
	"rejected": {"invalid_request", "resource_unavailable"},
	"failed":   {"export_failed", "invalid_request"},
}

// WorkspaceExport pulls a workspace output archive through a ready
// read-only preparation, one chunk per request. begin names the handle and
// its Environment and yields the first chunk; each next names the offset
// the puller has consumed so far and yields the chunk there; cancel stops
// the export and gets no reply when it addresses the running export. There
// is one export per connection.
//
// Like a workspace read, the encoded request is bounded by
// MaxRequestPayloadBytes: before decoding (CheckRawPayloadSize), by the
// decoder and by Validate (see WorkspaceRead).
type WorkspaceExport struct {
	Step          string `json:"step"`
	Handle        string `json:"handle,omitempty"`
	EnvironmentID string `json:"environment_id,omitempty"`
	Offset        int64  `json:"offset,omitempty"`
}

// UnmarshalJSON decodes strictly and refuses raw input over
// MaxRequestPayloadBytes before looking at it.
func (p *WorkspaceExport) UnmarshalJSON(data []byte) error {
	type plain WorkspaceExport
	return decodeBounded(TypeWorkspaceExport, data, (*plain)(p))
}

// Validate checks the request; see the type's doc comment.
func (p WorkspaceExport) Validate() error {
	c := newChecker("")
	c.oneOf("step", p.Step, ExportBegin, ExportNext, ExportCancel)
	if !c.ok() {
		return c.err()
	}
	switch p.Step {
	case ExportBegin:
		c.id("handle", p.Handle, MaxIDBytes)
		c.id("environment_id", p.EnvironmentID, MaxIDBytes)
		c.forbidden("offset", p.Offset != 0, "begin starts at offset 0")
	default:
		c.forbidden("handle", p.Handle != "", "only begin names the handle")
		c.forbidden("environment_id", p.EnvironmentID != "", "only begin names the environment")
		if p.Step == ExportNext {
			c.rangeInt("offset", p.Offset, 0, MaxExportBytes)
		} else {
			c.forbidden("offset", p.Offset != 0, "cancel carries offset 0")
		}
	}
	c.encodedSize(p, MaxRequestPayloadBytes)
	return c.err()
}

// WorkspaceExportResult answers one export request. offset is always
// present: for a chunk, where its data starts in the archive; for
// completed, the archive's total length; for failed, the offset reached;
// for rejected, 0. A chunk carries 1..ChunkBytes bytes; nothing else
// carries data.
type WorkspaceExportResult struct {
	Outcome   string     `json:"outcome"`
	Offset    *int64     `json:"offset"`
	Data      base64Data `json:"data,omitempty"`
	ErrorCode string     `json:"error_code,omitempty"`
}

// UnmarshalJSON decodes strictly and refuses a raw payload over
// MaxChunkFrameBytes before looking at it.
func (r *WorkspaceExportResult) UnmarshalJSON(data []byte) error {
	type plain WorkspaceExportResult
	if len(data) <= MaxChunkFrameBytes { // a chunk, decoded in one pass (export_result_decode.go)
		if v, ok := decodeExportResultDirect(data); ok {
			*r = v
			return nil
		}
	}
	return decodeBounded(TypeWorkspaceExportResult, data, (*plain)(r))
}

// Validate checks the result on its own; Answers also checks it against
// the request it answers.
func (r WorkspaceExportResult) Validate() error {
	c := newChecker("")
	c.oneOf("outcome", r.Outcome, "chunk", "completed", "failed", "rejected")
	if !c.ok() {
		return c.err()
	}
	if r.Offset == nil {
		c.fail("offset", RuleRequired, "must be present, 0 included")
		return c.err()
	}
	off := *r.Offset
	c.rangeInt("offset", off, 0, MaxExportBytes)
	c.forbidden("offset", r.Outcome == "rejected" && off != 0, "a rejection precedes any data; its offset is 0")
	if r.Outcome == "chunk" {
		c.chunkData(off, len(r.Data), MaxExportBytes, "archive")
	} else {
		c.forbidden("data", len(r.Data) > 0, "only a chunk carries data")
	}
	c.errorCode(r.Outcome, r.ErrorCode, workspaceExportCodes, "result")
	return c.err()
}

// Answers validates r and checks it against the request it answers: a
// begin is answered at offset 0, a next at the offset it named (a failure
// reports the Runtime's offset instead); a cancel
// of the running export gets no reply, so only a rejection can answer one.
// The error is stamped with the message type under "payload".
func (r WorkspaceExportResult) Answers(req WorkspaceExport) *FieldError {
	if err := r.Validate(); err != nil {
		return payloadError(TypeWorkspaceExportResult, err)
	}
	c := newChecker(TypeWorkspaceExportResult)
	switch {
	case r.Outcome == "rejected":
	case req.Step == ExportCancel:
		c.fail("payload.outcome", RuleConflict, "a cancel is never answered by "+r.Outcome)
	case r.Outcome == "failed":
		// A failure reports the Runtime's own offset, which differs from the
		// request's exactly when the request named the wrong one.
	case *r.Offset != req.Offset:
		c.fail("payload.offset", RuleConflict, "must be the request's offset "+strconv.Itoa(int(req.Offset)))
	}
	return c.first
}
