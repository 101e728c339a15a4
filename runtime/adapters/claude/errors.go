package claude

import (
	"strings"

	"github.com/agentwire/agentwire/internal/runtime/bounded"
	"github.com/agentwire/agentwire/wire"
)

// Engine failure classification: Claude Code's structured fields of a
// failed model call (the synthetic assistant message's api_error_type and
// error, api_error for a connection failure, the result's terminal_reason)
// onto the accepted codes (daemon-protocol.txt:171). Only structured values
// are read, never the message text (daemon-protocol.txt:173); a value this
// table does not know leaves the error unclassified.

// apiErrorTypes maps the provider's error type (api_error_type).
var apiErrorTypes = map[string]wire.EngineFailureCode{
	"rate_limit_error":      wire.EngineRateLimitExceeded,
	"authentication_error":  wire.EngineAuthenticationError,
	"permission_error":      wire.EngineAuthenticationError,
	"not_found_error":       wire.EngineResourceNotFound,
	"api_error":             wire.EngineServerError,
	"overloaded_error":      wire.EngineServerOverloaded,
	"invalid_request_error": wire.EngineInvalidRequest,
}

// claudeErrors maps Claude Code's own error category (error), for a
// failure without a provider type.
var claudeErrors = map[string]wire.EngineFailureCode{
	"rate_limit":            wire.EngineRateLimitExceeded,
	"authentication_failed": wire.EngineAuthenticationError,
	"model_not_found":       wire.EngineResourceNotFound,
	"invalid_request":       wire.EngineInvalidRequest,
}

// classify is the error frame of a failed result: its text is the
// result's, its code from the structured fields.
func classify(r resultEvent, a *assistantEvent) wire.ErrorFrame {
	text := strings.TrimSpace(r.Result)
	if text == "" {
		text = strings.Join(r.Errors, "; ")
	}
	if text == "" {
		text = "Claude Code ended the Turn with " + r.Subtype
	}
	text = "claude: " + text
	status := 0
	if r.APIErrorStatus != nil {
		status = *r.APIErrorStatus
	}
	var code wire.EngineFailureCode
	switch {
	case r.TerminalReason == "prompt_too_long":
		code = wire.EngineContextLengthExceeded
	case a != nil && a.APIError == "connection_failed":
		code = wire.EngineConnectionFailed
	case a != nil && apiErrorTypes[a.APIErrorType] != "":
		code = apiErrorTypes[a.APIErrorType]
	case a != nil:
		code = claudeErrors[a.Error]
	}
	return wire.NewEngineError(boundText(text), code, status)
}

// boundText keeps an error text short (512 bytes, as the codex adapter).
func boundText(s string) string { return bounded.Text(s, 512) }
