package wire

import (
	"encoding/base64"
	"encoding/json"
)

// Message types of this file and of the other transfer files. The generated
// catalog names them too; these private copies let the checks below stamp
// the type on the errors they build before the catalog exists.
const (
	runtimePrepareType        = "runtime_prepare"
	runtimePrepareResultType  = "runtime_prepare_result"
	workspaceReadType         = "workspace_read"
	workspaceReadResultType   = "workspace_read_result"
	workspaceWriteType        = "workspace_write"
	workspaceWriteResultType  = "workspace_write_result"
	workspaceExportType       = "workspace_export"
	workspaceExportResultType = "workspace_export_result"
)

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

// Finite error codes of workspace_read_result, by outcome.
var (
	workspaceReadRejectedCodes = []string{"invalid_request", "read_capacity", "resource_unavailable", "read_unsupported", "not_directory", "not_found", "permission_denied"}
	workspaceReadUnknownCodes  = []string{"read_unconfirmed"}
)

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
	return workspaceUnmarshalBounded(workspaceReadType, data, (*plain)(p))
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
	workspaceCheckEncodedSize(c, p, MaxRequestPayloadBytes)
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
	Data              workspaceBytes      `json:"data,omitempty"`
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
		c.fail("data", RuleTooLarge, "longer than "+itoa(MaxReadBytes)+" bytes")
	}
	c.forbidden("data", !completed && len(r.Data) > 0, "a "+r.Outcome+" read carries no bytes")
	c.forbidden("truncated", !completed && r.Truncated, "only a completed read can be truncated")
	c.forbidden("truncated", r.Directory != nil && r.Truncated, "a directory result reports truncation in directory.truncated")
	if completed && !r.CloseAcknowledged {
		c.fail("close_acknowledged", RuleRequired, "a completed read needs an acknowledged native close")
	}
	switch r.Outcome {
	case "completed":
		c.forbidden("error_code", r.ErrorCode != "", "a completed read carries no error_code")
	case "rejected":
		c.oneOf("error_code", r.ErrorCode, workspaceReadRejectedCodes...)
	case "unknown":
		c.oneOf("error_code", r.ErrorCode, workspaceReadUnknownCodes...)
	}
	if r.Directory != nil {
		c.forbidden("directory", !completed, "a "+r.Outcome+" read carries no directory")
		if len(r.Data) > 0 {
			c.fail("directory", RuleConflict, "a result carries bytes or a directory, not both")
		}
		workspaceNested(c, "directory", r.Directory.validate())
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
		c.fail("entries", RuleTooLarge, "more than "+itoa(MaxDirectoryEntries)+" entries")
	}
	seen := make(map[string]bool, len(d.Entries))
	for i, e := range d.Entries {
		if !c.ok() {
			break
		}
		ep := "entries[" + itoa(i) + "]"
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
	if d.Truncated == nil {
		c.fail("truncated", RuleRequired, "must be present: true or false")
	}
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
		return workspaceStamp(workspaceReadResultType, err)
	}
	c := newChecker(workspaceReadResultType)
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

// workspaceBytes is raw binary data, base64 in JSON exactly like a []byte,
// and assignable to and from []byte. It exists so that bad base64 is
// reported as a format error on its member rather than as an anonymous
// syntax error of the whole payload, and so that empty data decodes as nil
// (which is what an omitted member re-decodes to). Every member of this type
// is named "data" at the root of its payload; the error says so.
type workspaceBytes []byte

// UnmarshalJSON accepts a base64 string or null.
func (b *workspaceBytes) UnmarshalJSON(raw []byte) error {
	if string(raw) == "null" {
		*b = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return fieldErr("", "data", RuleType, "expected a base64 string")
	}
	d, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return fieldErr("", "data", RuleFormat, "not valid base64")
	}
	if len(d) == 0 {
		d = nil
	}
	*b = d
	return nil
}

// workspacePayloadLimit is the bound on the raw encoded payload of a
// message type, or 0 when the type has none of its own (the transport's
// MaxFrameBytes still applies).
func workspacePayloadLimit(typ string) int {
	switch typ {
	case workspaceReadType, workspaceExportType:
		return MaxRequestPayloadBytes
	case runtimePrepareType:
		return MaxRuntimePrepareFrameBytes
	case workspaceWriteType, workspaceExportResultType:
		// The reference bounds the whole frame at MaxChunkFrameBytes; the
		// payload, being part of it, is bounded at least as tightly.
		return MaxChunkFrameBytes
	}
	return 0
}

// CheckRawPayloadSize refuses the raw encoded payload of a workspace read
// or export request over MaxRequestPayloadBytes, of a runtime_prepare frame
// over MaxRuntimePrepareFrameBytes and of a workspace_write or
// workspace_export_result over MaxChunkFrameBytes. A receiver runs it on the
// envelope's payload before decoding anything, so an oversized request is
// never parsed or admitted. It returns nil for every other type. The error is
// a *FieldError on "payload" with RuleTooLarge (errors.Is ErrTooLarge).
func CheckRawPayloadSize(typ string, payload []byte) error {
	if limit := workspacePayloadLimit(typ); limit > 0 && len(payload) > limit {
		return fieldErr(typ, "payload", RuleTooLarge, "encoded payload exceeds "+itoa(limit)+" bytes")
	}
	return nil
}

// workspaceUnmarshalBounded is the body of the UnmarshalJSON methods of
// payloads with a raw size bound: it refuses oversized input, then decodes
// strictly (a custom UnmarshalJSON does not inherit the caller's
// DisallowUnknownFields). Errors are relative to the payload root.
func workspaceUnmarshalBounded(typ string, data []byte, v any) error {
	if limit := workspacePayloadLimit(typ); limit > 0 && len(data) > limit {
		return fieldErr("", "", RuleTooLarge, "encoded payload exceeds "+itoa(limit)+" bytes")
	}
	return workspaceDecodeStrict(data, v)
}

// workspaceDecodeStrict decodes one JSON value strictly, with error paths
// relative to that value (decodeStrict, which names nested members by their
// full path, without its prefix).
func workspaceDecodeStrict(data []byte, v any) error {
	err := decodeStrict("", "", data, v)
	if fe, ok := err.(*FieldError); ok && fe.Field == orRoot("") {
		fe.Field = ""
	}
	return err
}

// workspaceCheckEncodedSize fails the whole payload when its canonical
// encoding (what Marshal sends) exceeds limit. It runs last, after the
// field rules, so a bad field is reported by name first.
func workspaceCheckEncodedSize(c *checker, p any, limit int) {
	if !c.ok() {
		return
	}
	b, err := json.Marshal(p)
	if err != nil {
		c.fail("", RuleType, "cannot encode")
		return
	}
	if len(b) > limit {
		c.fail("", RuleTooLarge, "encoded payload exceeds "+itoa(limit)+" bytes")
	}
}

// workspaceStamp turns a validator's relative error into a final one:
// the message type set and the path made absolute under "payload".
func workspaceStamp(typ string, err error) *FieldError {
	if err == nil {
		return nil
	}
	fe, _ := prefixed(typ, "payload", err).(*FieldError)
	return fe
}

// workspaceNested records a sub-validator's *FieldError under field. It
// exists because checker.nested takes an error: a nil *FieldError passed
// there would arrive as a non-nil interface holding a nil pointer.
func workspaceNested(c *checker, field string, fe *FieldError) {
	if fe != nil {
		c.nested(field, fe)
	}
}
