package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// EngineFailureCode is the neutral classification an adapter may attach to
// an error frame. It is metadata, not a terminal event and not a public
// error contract: it cannot turn a completed or cancelled Turn into a
// failure, and Core keeps it (as engine_error_code / engine_http_status)
// only beside its own error code. Adapters map structured native failures
// to these codes; they never classify error prose.
type EngineFailureCode string

// The accepted engine failure codes. Any other value leaves an error
// unclassified.
const (
	EngineAuthenticationError   EngineFailureCode = "authentication_error"
	EngineRateLimitExceeded     EngineFailureCode = "rate_limit_exceeded"
	EngineUsageLimitExceeded    EngineFailureCode = "usage_limit_exceeded"
	EngineServerOverloaded      EngineFailureCode = "server_overloaded"
	EngineServerError           EngineFailureCode = "server_error"
	EngineInvalidRequest        EngineFailureCode = "invalid_request"
	EngineResourceNotFound      EngineFailureCode = "resource_not_found"
	EngineRequestTimeout        EngineFailureCode = "request_timeout"
	EngineContextLengthExceeded EngineFailureCode = "context_length_exceeded"
	EngineCyberPolicy           EngineFailureCode = "cyber_policy"
	EngineConnectionFailed      EngineFailureCode = "connection_failed"
)

// EngineFailureCodes lists the accepted codes in a stable order.
func EngineFailureCodes() []EngineFailureCode {
	return []EngineFailureCode{
		EngineAuthenticationError, EngineRateLimitExceeded, EngineUsageLimitExceeded,
		EngineServerOverloaded, EngineServerError, EngineInvalidRequest,
		EngineResourceNotFound, EngineRequestTimeout, EngineContextLengthExceeded,
		EngineCyberPolicy, EngineConnectionFailed,
	}
}

// Valid reports whether c is one of the accepted codes. Matching is exact:
// no case folding or trimming, so "Server_Error " is unknown.
func (c EngineFailureCode) Valid() bool {
	for _, k := range EngineFailureCodes() {
		if c == k {
			return true
		}
	}
	return false
}

// The HTTP status range a connection_failed classification may keep.
const (
	MinEngineHTTPStatus = 100
	MaxEngineHTTPStatus = 599
)

// ClassifyEngineFailure extracts the neutral classification of an error
// frame. ok is false when the error is unclassified: code missing, not a
// JSON string, or not one of the accepted codes. When ok is true, code is
// that code and httpStatus is the frame's status if and only if the code is
// connection_failed and the status is a JSON integer literal from 100 to
// 599; in every other case httpStatus is 0 (discarded).
//
// A discarded status never unclassifies the code: connection_failed with a
// status of 600, 502.5, 5.02e2 or "502" is still connection_failed, with no
// status. Only an integer literal counts, so 502.0 and 5.02e2 are discarded
// like "502", exactly as a decoder into an integer would refuse them.
//
// Classification never makes a frame invalid and never touches the error
// text, usage or done: every outcome here is a valid frame.
func ClassifyEngineFailure(e ErrorFrame) (code EngineFailureCode, httpStatus int, ok bool) {
	var s string
	if len(e.Code) == 0 || json.Unmarshal(e.Code, &s) != nil {
		return "", 0, false // missing, null (which leaves s empty) or not a string
	}
	code = EngineFailureCode(s)
	if !code.Valid() {
		return "", 0, false
	}
	if code != EngineConnectionFailed {
		return code, 0, true
	}
	if n, ok := engineIntegerLiteral(e.HTTPStatus); ok && n >= MinEngineHTTPStatus && n <= MaxEngineHTTPStatus {
		return code, n, true
	}
	return code, 0, true
}

// engineIntegerLiteral parses raw as a JSON number written as an integer:
// an optional minus and digits, with no fraction, exponent or quotes.
func engineIntegerLiteral(raw NativeJSON) (int, bool) {
	t := bytes.TrimSpace(raw)
	digits := t
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false // empty, or too long to be a status
	}
	for _, b := range digits {
		if b < '0' || b > '9' {
			return 0, false
		}
	}
	if len(digits) > 1 && digits[0] == '0' {
		return 0, false // JSON forbids leading zeros
	}
	n, err := strconv.Atoi(string(t))
	return n, err == nil
}

// NewEngineError builds an error frame with an optional classification.
// code may be "" (unclassified). The status is written only where
// ClassifyEngineFailure would keep it (connection_failed, 100..599), so a
// producer never sends metadata its peer must discard.
func NewEngineError(message string, code EngineFailureCode, httpStatus int) ErrorFrame {
	e := ErrorFrame{Error: message}
	if code != "" {
		e.Code, _ = json.Marshal(string(code))
	}
	if code == EngineConnectionFailed && httpStatus >= MinEngineHTTPStatus && httpStatus <= MaxEngineHTTPStatus {
		e.HTTPStatus = NativeJSON(strconv.Itoa(httpStatus))
	}
	return e
}
