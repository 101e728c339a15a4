package wire

import (
	"strconv"
	"unicode/utf8"
)

// Hand-written encoders of the payloads that carry bulk data (issue 25):
// a byte read's result (up to 1 MiB, daemon-protocol.txt:181) and an
// export chunk (64 KiB). encoding/json encodes their data into a buffer of
// its own, which marshalEnvelope then copies into the frame; these write
// the same bytes once, base64 straight into a frame sized up front.
// payload_append_test.go checks them against encoding/json for random
// values.

// payloadAppender is a payload that can write its own JSON, byte for byte
// what encoding/json writes for it. appendJSON reports false for a value
// it leaves to encoding/json (a directory listing).
type payloadAppender interface {
	appendJSON(dst []byte) ([]byte, bool)
	jsonSize() int
}

// appendEnvelope is marshalEnvelope for a payloadAppender; false leaves
// the frame to the generic path.
func appendEnvelope(id string, p Payload, a payloadAppender, trace string) ([]byte, bool) {
	if !utf8.ValidString(id) || !utf8.ValidString(trace) {
		return nil, false // encoding/json repairs what this cannot write verbatim
	}
	typ := p.MessageType()
	b := make([]byte, 0, a.jsonSize()+2*(len(typ)+len(id)+len(trace))+48)
	b = append(b, `{"type":`...)
	b = appendJSONString(b, typ)
	if id != "" {
		b = append(b, `,"id":`...)
		b = appendJSONString(b, id)
	}
	b = append(b, `,"payload":`...)
	b, ok := a.appendJSON(b)
	if !ok {
		return nil, false
	}
	if trace != "" {
		b = append(b, `,"trace":`...)
		b = appendJSONString(b, trace)
	}
	return append(b, '}'), true
}

// appendData appends `,"data":"…"` unless data is empty (omitempty).
func appendData(dst []byte, data []byte) []byte {
	if len(data) == 0 {
		return dst
	}
	dst = append(dst, `,"data":"`...)
	dst = appendBase64(dst, data)
	return append(dst, '"')
}

// appendStringMember appends `,"name":"value"` unless value is empty.
func appendStringMember(dst []byte, name, value string) []byte {
	if value == "" {
		return dst
	}
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return appendJSONString(dst, value)
}

func (r WorkspaceReadResult) jsonSize() int {
	return 96 + 2*(len(r.Outcome)+len(r.ErrorCode)) + base64Len(len(r.Data))
}

// appendJSON writes the members in WorkspaceReadResult's field order with
// its omissions.
func (r WorkspaceReadResult) appendJSON(dst []byte) ([]byte, bool) {
	if r.Directory != nil {
		return dst, false
	}
	dst = append(dst, `{"outcome":`...)
	dst = appendJSONString(dst, r.Outcome)
	dst = appendData(dst, r.Data)
	if r.Truncated {
		dst = append(dst, `,"truncated":true`...)
	}
	if r.CloseAcknowledged {
		dst = append(dst, `,"close_acknowledged":true`...)
	}
	dst = appendStringMember(dst, "error_code", r.ErrorCode)
	return append(dst, '}'), true
}

func (r WorkspaceExportResult) jsonSize() int {
	return 80 + 2*(len(r.Outcome)+len(r.ErrorCode)) + base64Len(len(r.Data))
}

// appendJSON writes the members in WorkspaceExportResult's field order:
// offset is always present (null when unset).
func (r WorkspaceExportResult) appendJSON(dst []byte) ([]byte, bool) {
	dst = append(dst, `{"outcome":`...)
	dst = appendJSONString(dst, r.Outcome)
	dst = append(dst, `,"offset":`...)
	if r.Offset == nil {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendInt(dst, *r.Offset, 10)
	}
	dst = appendData(dst, r.Data)
	dst = appendStringMember(dst, "error_code", r.ErrorCode)
	return append(dst, '}'), true
}
