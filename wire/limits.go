package wire

import (
	"encoding/json"
	"strconv"
)

// Limits shared by both peers. Each is checked in exactly one place in this
// package, so Core and the Runtime reject the same frames.
const (
	// MaxFrameBytes bounds one WebSocket message in either direction.
	MaxFrameBytes = 4 << 20
	// MaxRequestPayloadBytes bounds the encoded payload of a workspace read
	// or export request, checked before the request is admitted.
	MaxRequestPayloadBytes = 8 << 10
	// MaxIDBytes bounds correlation IDs (operation, suspension, request IDs).
	// An ID over the limit is never echoed back.
	MaxIDBytes = 128
	// MaxTraceBytes bounds trace metadata copied into replies; longer trace
	// data is omitted from the reply rather than rejected.
	MaxTraceBytes = 256
	// MaxReadBytes bounds the raw bytes of one workspace read result.
	MaxReadBytes = 1 << 20
	// ChunkBytes is the size of one runtime_prepare, workspace_write or
	// workspace_export data frame.
	ChunkBytes = 64 << 10
	// MaxChunkFrameBytes bounds one encoded chunk frame (base64 overhead included).
	MaxChunkFrameBytes = 96 << 10
	// MaxTransferBytes bounds a runtime_prepare or workspace_write body.
	MaxTransferBytes = 50 << 20
	// MaxPublicInlineWriteBytes is the public API's decoded inline write
	// bound, checked by Core before any Runtime work.
	MaxPublicInlineWriteBytes = 5 << 20
	// MaxRuntimePrepareFrameBytes bounds one encoded runtime_prepare frame.
	MaxRuntimePrepareFrameBytes = 1 << 20
	// MaxExportBytes bounds one workspace export archive.
	MaxExportBytes = 528 << 20
	// MaxDirectoryEntries bounds the names in one directory read result.
	MaxDirectoryEntries = 1024
	// MaxNameBytes bounds one directory entry name.
	MaxNameBytes = 255
	// MaxPathBytes bounds a workspace path.
	MaxPathBytes = 4096
	// MaxInputIDBytes bounds an active-input (prompt_steer) input ID.
	MaxInputIDBytes = 256
	// MaxHarnessConfigBytes bounds the harness_config object.
	MaxHarnessConfigBytes = 16 << 10
	// MaxPluginSlot is the highest runtime_prepare plugin slot.
	MaxPluginSlot = 49
	// MaxInitializationItems bounds environment variables or packages in one
	// runtime_prepare initialization.
	MaxInitializationItems = 1000
	// MaxJSONDepth bounds the nesting of arrays and objects in a payload
	// (and in any other envelope member); the envelope's own object is one
	// level more.
	//
	// decision: the protocol sets no depth, but without one a frame of a
	// few million '[' costs a recursive reader memory and time out of all
	// proportion to its size. The bound is generous because tool arguments,
	// results and output schemas are opaque nested JSON
	// (daemon-protocol.txt:181 bounds frames at 4 MiB for the same reason).
	MaxJSONDepth = 64
)

// payloadLimit is the bound on the raw encoded payload of a message type,
// or 0 when the type has none of its own (the transport's MaxFrameBytes
// still applies).
func payloadLimit(typ string) int {
	switch typ {
	case TypeWorkspaceRead, TypeWorkspaceExport:
		return MaxRequestPayloadBytes
	case TypeRuntimePrepare:
		return MaxRuntimePrepareFrameBytes
	case TypeWorkspaceWrite, TypeWorkspaceExportResult:
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
	if limit := payloadLimit(typ); limit > 0 && len(payload) > limit {
		return fieldErr(typ, "payload", RuleTooLarge, "encoded payload exceeds "+strconv.Itoa(limit)+" bytes")
	}
	return nil
}

// decodeBounded is the body of the UnmarshalJSON methods of payloads with a
// raw size bound: it refuses oversized input, then decodes strictly (a
// custom UnmarshalJSON does not inherit the caller's strictness). Errors are
// relative to the payload root.
//
// A type whose UnmarshalJSON is decodeBounded marks itself selfStrict, so
// that decodeStrict hands it its bytes directly.
func decodeBounded(typ string, data []byte, v any) error {
	if limit := payloadLimit(typ); limit > 0 && len(data) > limit {
		return fieldErr("", "", RuleTooLarge, "encoded payload exceeds "+strconv.Itoa(limit)+" bytes")
	}
	return decodeRelative(data, v)
}

// chunkData checks the data of one chunk of a transfer or an export: n
// bytes, 1..ChunkBytes of them, at offset, ending within bound (what names
// the whole the bound limits: "transfer", "archive").
func (c *checker) chunkData(offset int64, n int, bound int64, what string) {
	switch {
	case n == 0:
		c.fail("data", RuleRequired, "a chunk carries at least one byte")
	case n > ChunkBytes:
		c.fail("data", RuleTooLarge, "a chunk carries at most "+strconv.Itoa(ChunkBytes)+" bytes")
	case offset+int64(n) > bound:
		c.fail("data", RuleTooLarge, "ends beyond the "+strconv.Itoa(int(bound))+"-byte "+what+" bound")
	}
}

// encodedSize fails the whole payload when its canonical encoding (what
// Marshal sends) exceeds limit. It runs last, after the field rules, so a
// bad field is reported by name first.
func (c *checker) encodedSize(p any, limit int) {
	if !c.ok() {
		return
	}
	b, err := json.Marshal(p)
	if err != nil {
		c.fail("", RuleType, "cannot encode")
		return
	}
	if len(b) > limit {
		c.fail("", RuleTooLarge, "encoded payload exceeds "+strconv.Itoa(limit)+" bytes")
	}
}

// selfStrict is a payload whose UnmarshalJSON is decodeBounded over its
// plain fields: it checks the whole document itself.
type selfStrict interface {
	json.Unmarshaler
	decodesStrictly()
}

func (*RuntimePrepare) decodesStrictly()        {}
func (*WorkspaceExport) decodesStrictly()       {}
func (*WorkspaceExportResult) decodesStrictly() {}
func (*WorkspaceRead) decodesStrictly()         {}
func (*WorkspaceWrite) decodesStrictly()        {}
