package wire

import (
	"strconv"
	"unicode/utf8"
)

// The hand-written encoder of the workspace_write chunk frame (issue 25).
//
// Encode builds a chunk's frame with encoding/json: the payload is
// marshalled into a buffer of its own (base64 through an intermediate
// buffer that is then copied in), and the envelope is written around a
// second copy of it. A 50 MiB write is 800 such frames. AppendWriteChunk
// writes the same bytes once, into a buffer the caller keeps across
// chunks, with base64 encoded straight into it; chunk_encode_test.go
// checks it against Encode for random chunks, offsets and IDs.

// ChunkFrameCap is a capacity that holds the chunk frame of n data bytes
// with id and a trace of up to traceSpare bytes added later (WithTrace),
// so that a buffer of that capacity is never grown.
func ChunkFrameCap(n int, id string) int {
	return len(`{"type":"workspace_write","id":"","payload":{"step":"chunk","offset":,"data":""}}`) +
		2*len(id) + 20 + base64Len(n) + traceSpare
}

// traceSpare is room for `,"trace":"…"` around a W3C traceparent (55
// bytes), the trace a reply carries (peer's replyTrace).
const traceSpare = 80

// AppendWriteChunk appends to dst the frame Encode(id, WorkspaceWrite{Step:
// StepChunk, Offset: offset, Data: data}, "") returns, after the same
// checks, and returns it. The frame starts at len(dst).
func AppendWriteChunk(dst []byte, id string, offset int64, data []byte) ([]byte, error) {
	p := WorkspaceWrite{Step: StepChunk, Offset: offset, Data: data}
	e, ok := Lookup(TypeWorkspaceWrite)
	if !ok {
		return dst, &RouteError{Type: TypeWorkspaceWrite, Unknown: true}
	}
	if err := CheckID(e, id); err != nil {
		return dst, err
	}
	if err := p.Validate(); err != nil {
		return dst, prefixed(e.Type, "payload", err)
	}
	if err := checkBinding(e.Type, id, p); err != nil {
		return dst, err
	}
	if !utf8.ValidString(id) {
		// Unreachable past CheckID (a UUID), kept so that the bytes stay
		// Encode's whatever CheckID accepts: Encode repairs such an id.
		f, err := Encode(id, p, "")
		return append(dst, f...), err
	}
	// The members in the order, and with the omissions, of encoding/json
	// over WorkspaceWrite: step, then offset unless 0, then data unless
	// empty (Validate refused an empty chunk already).
	dst = append(dst, `{"type":"workspace_write"`...)
	if id != "" {
		dst = append(dst, `,"id":`...)
		dst = appendJSONString(dst, id)
	}
	dst = append(dst, `,"payload":{"step":"chunk"`...)
	if offset != 0 {
		dst = append(dst, `,"offset":`...)
		dst = strconv.AppendInt(dst, offset, 10)
	}
	if len(data) > 0 {
		// Base64's alphabet needs no JSON escaping (encoding/json writes it
		// verbatim too).
		dst = append(dst, `,"data":"`...)
		dst = appendBase64(dst, data)
		dst = append(dst, '"')
	}
	return append(dst, "}}"...), nil
}

// WithTrace returns frame, an envelope Encode wrote without a trace, as
// Encode writes it with trace: the trace member last. It reuses frame's
// array when its capacity allows (ChunkFrameCap leaves room for a
// traceparent), so the caller must not use frame afterwards. A trace that
// is not valid UTF-8 is refused, as Encode refuses it.
func WithTrace(frame []byte, typ, trace string) ([]byte, error) {
	if trace == "" {
		return frame, nil
	}
	if !utf8.ValidString(trace) {
		return frame, fieldErr(typ, "trace", RuleFormat, "not valid UTF-8 (it would be sent altered)")
	}
	if len(frame) == 0 || frame[len(frame)-1] != '}' {
		return frame, fieldErr(typ, "(frame)", RuleSyntax, "not an encoded envelope")
	}
	frame = append(frame[:len(frame)-1], `,"trace":`...)
	frame = appendJSONString(frame, trace)
	return append(frame, '}'), nil
}
