package codex

import (
	"encoding/json"

	"github.com/agentwire/agentwire/internal/runtime/bounded"
	"github.com/agentwire/agentwire/wire"
)

// Engine failure classification: Codex's structured codexErrorInfo (on an
// `error` notification or a failed turn) onto the accepted codes
// (daemon-protocol.txt:171). Only the structured value is read, never the
// message (daemon-protocol.txt:173: an adapter never classifies prose); a
// value this table does not know leaves the error unclassified.

// codexErrorCodes maps the string forms of codexErrorInfo.
//
// decision: only the values whose meaning is one of the accepted codes are
// mapped. sessionBudgetExceeded is a spending limit of the account, as
// usageLimitExceeded is; flexUnavailable, policyCapacityUnavailable,
// bioPolicy, misalignmentPolicyViolation, tooManyDenials,
// threadRollbackFailed, sandboxError, inferenceHookDenied and other name no
// accepted category, and a wrong code is worse than none
// (daemon-protocol.txt:171: an unknown value leaves the error unclassified).
var codexErrorCodes = map[string]wire.EngineFailureCode{
	"contextWindowExceeded": wire.EngineContextLengthExceeded,
	"usageLimitExceeded":    wire.EngineUsageLimitExceeded,
	"sessionBudgetExceeded": wire.EngineUsageLimitExceeded,
	"rateLimitExceeded":     wire.EngineRateLimitExceeded,
	"serverOverloaded":      wire.EngineServerOverloaded,
	"modelNotFound":         wire.EngineResourceNotFound,
	"cyberPolicy":           wire.EngineCyberPolicy,
	"internalServerError":   wire.EngineServerError,
	"unauthorized":          wire.EngineAuthenticationError,
	"badRequest":            wire.EngineInvalidRequest,
}

// The object forms that carry the provider's HTTP status.
var codexStatusErrors = map[string]bool{
	"httpConnectionFailed":           true,
	"responseStreamConnectionFailed": true,
	"responseStreamDisconnected":     true,
	"responseTooManyFailedAttempts":  true,
}

// classifyCodexError maps one codexErrorInfo value. status is the HTTP
// status it carried (0 when none), whatever the code; the error frame keeps
// it only with connection_failed (wire.NewEngineError).
func classifyCodexError(info json.RawMessage) (code wire.EngineFailureCode, status int) {
	if len(info) == 0 {
		return "", 0
	}
	var s string
	if json.Unmarshal(info, &s) == nil {
		return codexErrorCodes[s], 0
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(info, &obj) != nil || len(obj) != 1 {
		return "", 0
	}
	for name, body := range obj {
		if !codexStatusErrors[name] {
			return "", 0
		}
		var v struct {
			HTTPStatusCode *int `json:"httpStatusCode"`
		}
		_ = json.Unmarshal(body, &v)
		if v.HTTPStatusCode == nil || *v.HTTPStatusCode == 0 {
			// No answer from the provider at all: the connection failed.
			return wire.EngineConnectionFailed, 0
		}
		st := *v.HTTPStatusCode
		return classifyHTTPStatus(st), st
	}
	return "", 0
}

// classifyHTTPStatus maps the provider's HTTP status that Codex reports
// inside its connection errors.
//
// decision: the status inside httpConnectionFailed and its siblings is
// structured metadata, not prose, so it classifies the failure where its
// meaning is one accepted code (401 and 403 authentication, 429 the rate
// limit, 503 and 529 overload, 500 a server error, 400 an invalid request,
// 404 a missing resource, 408 a timeout); any other status stays a failed
// connection that keeps the status (daemon-protocol.txt:171).
func classifyHTTPStatus(st int) wire.EngineFailureCode {
	switch st {
	case 401, 403:
		return wire.EngineAuthenticationError
	case 429:
		return wire.EngineRateLimitExceeded
	case 503, 529:
		return wire.EngineServerOverloaded
	case 500:
		return wire.EngineServerError
	case 400:
		return wire.EngineInvalidRequest
	case 404:
		return wire.EngineResourceNotFound
	case 408:
		return wire.EngineRequestTimeout
	}
	return wire.EngineConnectionFailed
}

// connectionStatus is the HTTP status a retried connection error carried,
// 0 when none (for the connection_failed the adapter's own deadline ends a
// Run with).
func connectionStatus(info json.RawMessage) int {
	var obj map[string]struct {
		HTTPStatusCode *int `json:"httpStatusCode"`
	}
	if json.Unmarshal(info, &obj) != nil {
		return 0
	}
	for name, v := range obj {
		if codexStatusErrors[name] && v.HTTPStatusCode != nil {
			return *v.HTTPStatusCode
		}
	}
	return 0
}

// engineError builds the error frame of a Codex error: its message as the
// text (never classified) and the code from codexErrorInfo.
func engineError(message string, info json.RawMessage) wire.ErrorFrame {
	code, status := classifyCodexError(info)
	return wire.NewEngineError(boundText(message), code, status)
}

// boundText keeps error texts short on the wire.
func boundText(s string) string { return bounded.Text(s, maxErrorText) }

// maxErrorText bounds the text of an error frame the adapter writes.
const maxErrorText = 512
