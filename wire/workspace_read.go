package wire

import "strconv"

// Operations of WorkspaceRead.
const (
	// ReadBytes reads the bytes of one file; on the wire it is the absent
	// (empty) operation.
	ReadBytes = ""
	// ReadDirectory lists one directory.
	ReadDirectory = "directory"
)

// Kinds of a WorkspaceDirectoryEntry.
const (
	EntryFile      = "file"
	EntryDirectory = "directory"
	EntrySymlink   = "symlink"
	EntryOther     = "other"
)

// Finite error codes of workspace_read_result, by outcome; a completed
// read carries none.
var workspaceReadCodes = outcomeCodes{
	"rejected": {"invalid_request", "read_capacity", "resource_unavailable", "read_unsupported", "not_directory", "not_found", "permission_denied"},
	"unknown":  {"read_unconfirmed"},
}

// WorkspaceRead reads the bytes of one file, or lists one directory, of the
// workspace bound to an existing preparation handle or to the Run that
// handle was transferred to, on the same connection. The target names the
// exact frozen Environment; a caller cannot supply roots or sockets.
//
// The byte and entry limits are mutually exclusive: a byte read sets
// max_bytes and no max_entries, a directory read sets max_entries and sends
// max_bytes as 0 (the reference always emits max_bytes, so it is never
// omitted here either). An empty path names the workspace root, which only
// a directory read may address.
//
// The encoded request is bounded by MaxRequestPayloadBytes. The bound is
// checked three times, so no peer parses, admits or sends an oversized
// request: CheckRawPayloadSize on the raw payload before any decoding (the
// receive loop's job), the decoder itself (UnmarshalJSON refuses raw input
// over the bound, so decodePayload does too), and Validate on the payload's
// canonical encoding (so Marshal never emits what the other side refuses).
type WorkspaceRead struct {
	Handle        string `json:"handle,omitempty"`
	RunID         string `json:"run_id,omitempty"`
	EnvironmentID string `json:"environment_id"`
	Operation     string `json:"operation,omitempty"`
	Path          string `json:"path"`
	MaxBytes      int64  `json:"max_bytes"`
	MaxEntries    int64  `json:"max_entries,omitempty"`
}

// UnmarshalJSON decodes strictly and refuses raw input over
// MaxRequestPayloadBytes before looking at it.
func (p *WorkspaceRead) UnmarshalJSON(data []byte) error {
	type plain WorkspaceRead
	return decodeBounded(TypeWorkspaceRead, data, (*plain)(p))
}

// Validate checks the request; see the type's doc comment.
func (p WorkspaceRead) Validate() error {
	c := newChecker("")
	switch {
	case p.Handle == "" && p.RunID == "":
		c.fail("handle", RuleRequired, "a read targets either a handle or a run_id")
	case p.Handle != "" && p.RunID != "":
		c.fail("run_id", RuleConflict, "a read targets a handle or a run_id, not both")
	case p.Handle != "":
		c.id("handle", p.Handle, MaxIDBytes)
	default:
		c.id("run_id", p.RunID, MaxIDBytes)
	}
	c.id("environment_id", p.EnvironmentID, MaxIDBytes)
	c.oneOf("operation", p.Operation, ReadBytes, ReadDirectory)
	if !c.ok() {
		return c.err()
	}
	directory := p.Operation == ReadDirectory
	c.nested("path", CheckWorkspacePath(p.Path, directory))
	if directory {
		c.forbidden("max_bytes", p.MaxBytes != 0, "a directory read is bounded by max_entries; max_bytes must be 0")
		c.rangeInt("max_entries", p.MaxEntries, 1, MaxDirectoryEntries)
	} else {
		c.rangeInt("max_bytes", p.MaxBytes, 1, MaxReadBytes)
		c.forbidden("max_entries", p.MaxEntries != 0, "a byte read is bounded by max_bytes; it carries no max_entries")
	}
	c.encodedSize(p, MaxRequestPayloadBytes)
	return c.err()
}

// WorkspaceReadResult answers one WorkspaceRead. A completed read carries
// the bytes read (with explicit truncation when the file is longer than
// max_bytes) or the directory listing, and only once the native close was
// acknowledged. A rejection is a safe refusal that read nothing; unknown
// means the read was interrupted or ambiguous. Neither carries bytes.
//
// An empty file reads as a completed result without data: the reference
// omits empty data, so "carries data" cannot be told apart from "carries
// zero bytes" on the wire. A completed result without a directory is
// therefore a byte result; Answers checks that it matches the request.
type WorkspaceReadResult struct {
	Outcome           string              `json:"outcome"`
	Data              base64Data          `json:"data,omitempty"`
	Truncated         bool                `json:"truncated,omitempty"`
	CloseAcknowledged bool                `json:"close_acknowledged,omitempty"`
	ErrorCode         string              `json:"error_code,omitempty"`
	Directory         *WorkspaceDirectory `json:"directory,omitempty"`
}

// WorkspaceDirectory is the listing of one directory: its entries, in the
// order the Runtime read them, and whether the listing stopped early.
// Truncated must always be present, so that "complete" is never inferred
// from a missing member.
type WorkspaceDirectory struct {
	Entries   []WorkspaceDirectoryEntry `json:"entries"`
	Truncated *bool                     `json:"truncated"`
}

// WorkspaceDirectoryEntry is one name of a directory listing. Only regular
// files have a size; every other kind sends size_bytes as null.
type WorkspaceDirectoryEntry struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	SizeBytes *int64 `json:"size_bytes"`
}

// Validate checks the result on its own; Answers also checks it against the
// request it answers.
func (r WorkspaceReadResult) Validate() error {
	c := newChecker("")
	c.oneOf("outcome", r.Outcome, "completed", "rejected", "unknown")
	if !c.ok() {
		return c.err()
	}
	completed := r.Outcome == "completed"
	if len(r.Data) > MaxReadBytes {
		c.fail("data", RuleTooLarge, "longer than "+strconv.Itoa(MaxReadBytes)+" bytes")
	}
	c.forbidden("data", !completed && len(r.Data) > 0, "a "+r.Outcome+" read carries no bytes")
	c.forbidden("truncated", !completed && r.Truncated, "only a completed read can be truncated")
	c.forbidden("truncated", r.Directory != nil && r.Truncated, "a directory result reports truncation in directory.truncated")
	// A byte read asks for at least one byte (max_bytes >= 1), so a read
	// that stopped early has read at least one.
	c.forbidden("truncated", r.Directory == nil && r.Truncated && len(r.Data) == 0, "a truncated read carries the bytes read before the limit, at least one")
	if completed && !r.CloseAcknowledged {
		c.fail("close_acknowledged", RuleRequired, "a completed read needs an acknowledged native close")
	}
	c.errorCode(r.Outcome, r.ErrorCode, workspaceReadCodes, "read")
	if r.Directory != nil {
		c.forbidden("directory", !completed, "a "+r.Outcome+" read carries no directory")
		if len(r.Data) > 0 {
			c.fail("directory", RuleConflict, "a result carries bytes or a directory, not both")
		}
		c.nested("directory", r.Directory.validate())
	}
	return c.err()
}

// validate checks the listing with paths relative to the directory object.
func (d WorkspaceDirectory) validate() *FieldError {
	c := newChecker("")
	switch {
	case d.Entries == nil:
		c.fail("entries", RuleRequired, "entries must be present, [] when the directory is empty")
	case len(d.Entries) > MaxDirectoryEntries:
		c.fail("entries", RuleTooLarge, "more than "+strconv.Itoa(MaxDirectoryEntries)+" entries")
	}
	seen := make(map[string]bool, len(d.Entries))
	for i, e := range d.Entries {
		if !c.ok() {
			break
		}
		ep := "entries[" + strconv.Itoa(i) + "]"
		c.nested(ep+".name", CheckEntryName(e.Name))
		if c.ok() && seen[e.Name] {
			c.fail(ep+".name", RuleConflict, "repeats the name "+quote(e.Name))
		}
		seen[e.Name] = true
		c.oneOf(ep+".kind", e.Kind, EntryFile, EntryDirectory, EntrySymlink, EntryOther)
		switch {
		case !c.ok():
		case e.Kind == EntryFile && e.SizeBytes == nil:
			c.fail(ep+".size_bytes", RuleRequired, "a file entry needs its size")
		case e.Kind == EntryFile && *e.SizeBytes < 0:
			c.fail(ep+".size_bytes", RuleRange, "must not be negative")
		case e.Kind != EntryFile && e.SizeBytes != nil:
			c.fail(ep+".size_bytes", RuleForbidden, "only a file entry has a size; send null")
		}
	}
	c.requiredBool("truncated", d.Truncated)
	return c.first
}

// DriveKey maps the outcome onto the workspace_read machine: "completed",
// "truncated" for a completed read that stopped early (bytes or entries),
// "rejected" or "unknown"; "" for any other outcome.
func (r WorkspaceReadResult) DriveKey() string {
	switch r.Outcome {
	case "completed":
		if r.Truncated || (r.Directory != nil && r.Directory.Truncated != nil && *r.Directory.Truncated) {
			return "truncated"
		}
		return "completed"
	case "rejected", "unknown":
		return r.Outcome
	}
	return ""
}

// Answers validates r and checks it against the request it answers: a
// completed byte read returns no directory and at most max_bytes bytes; a
// completed directory read returns a directory of at most max_entries
// entries and no bytes; not_directory refuses only directory reads. The
// error is stamped with the message type and its field starts at "payload".
func (r WorkspaceReadResult) Answers(req WorkspaceRead) *FieldError {
	if err := r.Validate(); err != nil {
		return payloadError(TypeWorkspaceReadResult, err)
	}
	c := newChecker(TypeWorkspaceReadResult)
	directory := req.Operation == ReadDirectory
	switch {
	case r.Outcome == "rejected" && r.ErrorCode == "not_directory" && !directory:
		c.fail("payload.error_code", RuleConflict, "not_directory refuses only a directory read")
	case r.Outcome != "completed":
	case directory && r.Directory == nil:
		c.fail("payload.directory", RuleRequired, "a directory read returns a directory")
	case directory && int64(len(r.Directory.Entries)) > req.MaxEntries:
		c.fail("payload.directory.entries", RuleTooLarge, "more entries than the request's max_entries")
	case !directory && r.Directory != nil:
		c.fail("payload.directory", RuleForbidden, "a byte read returns bytes, not a directory")
	case !directory && int64(len(r.Data)) > req.MaxBytes:
		c.fail("payload.data", RuleTooLarge, "more bytes than the request's max_bytes")
	}
	return c.first
}
