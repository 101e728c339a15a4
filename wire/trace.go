package wire

import (
	"crypto/rand"
	"encoding/hex"
)

// TraceContext is a parsed W3C traceparent: version 00, a 16-byte trace ID,
// an 8-byte parent span ID and 8 bits of flags.
type TraceContext struct {
	TraceID [16]byte
	SpanID  [8]byte
	Flags   byte
	// Local is set when the peer's trace was missing or invalid and a fresh
	// trace was minted here instead.
	Local bool
}

// ParseTrace reads a traceparent ("00-<32 hex>-<16 hex>-<2 hex>"). A missing
// or invalid value is not an error: the receiver mints a fresh local trace,
// because trace data is diagnostic and must never cause a rejection.
func ParseTrace(s string) TraceContext {
	if tc, ok := parseTraceparent(s); ok {
		return tc
	}
	return NewTrace()
}

// NewTrace mints a fresh, sampled local trace.
func NewTrace() TraceContext {
	var tc TraceContext
	_, _ = rand.Read(tc.TraceID[:])
	_, _ = rand.Read(tc.SpanID[:])
	tc.Flags, tc.Local = 1, true
	return tc
}

func parseTraceparent(s string) (TraceContext, bool) {
	var tc TraceContext
	if len(s) != 55 || s[0:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return tc, false
	}
	if !decodeLowerHex(tc.TraceID[:], s[3:35]) || !decodeLowerHex(tc.SpanID[:], s[36:52]) {
		return tc, false
	}
	var flags [1]byte
	if !decodeLowerHex(flags[:], s[53:55]) {
		return tc, false
	}
	tc.Flags = flags[0]
	// An all-zero trace or span ID is invalid by the W3C rules.
	if tc.TraceID == ([16]byte{}) || tc.SpanID == ([8]byte{}) {
		return tc, false
	}
	return tc, true
}

func decodeLowerHex(dst []byte, s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	_, err := hex.Decode(dst, []byte(s))
	return err == nil
}

// String renders the traceparent.
func (tc TraceContext) String() string {
	b := make([]byte, 0, 55)
	b = append(b, "00-"...)
	b = hex.AppendEncode(b, tc.TraceID[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, tc.SpanID[:])
	b = append(b, '-')
	b = hex.AppendEncode(b, []byte{tc.Flags})
	return string(b)
}

// TraceIDString is the trace ID in lowercase hex, the trace_id log lines
// carry.
func (tc TraceContext) TraceIDString() string { return hex.EncodeToString(tc.TraceID[:]) }

// ReplyTrace is the trace to copy onto a reply: the request's trace when it
// is short enough, otherwise nothing (oversized trace data is omitted from
// replies, never echoed).
func ReplyTrace(requestTrace string) string {
	if len(requestTrace) > MaxTraceBytes {
		return ""
	}
	return requestTrace
}
