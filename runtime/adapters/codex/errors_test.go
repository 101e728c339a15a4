package codex

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/agentwire/agentwire/wire"
)

// Every codexErrorInfo shape the research notes record (harness-notes §2
// and §5), and the schema's other values, with the code and status the
// error frame must carry.
func TestClassifyCodexError(t *testing.T) {
	cases := []struct {
		name   string
		info   string
		code   wire.EngineFailureCode
		status int // what the frame keeps (connection_failed only)
	}{
		// Observed with the scripted endpoint.
		{"429", `{"responseTooManyFailedAttempts":{"httpStatusCode":429}}`, wire.EngineRateLimitExceeded, 0},
		{"401", `{"httpConnectionFailed":{"httpStatusCode":401}}`, wire.EngineAuthenticationError, 0},
		{"403", `{"httpConnectionFailed":{"httpStatusCode":403}}`, wire.EngineAuthenticationError, 0},
		{"500", `"internalServerError"`, wire.EngineServerError, 0},
		{"503", `{"httpConnectionFailed":{"httpStatusCode":503}}`, wire.EngineServerOverloaded, 0},
		{"529", `{"httpConnectionFailed":{"httpStatusCode":529}}`, wire.EngineServerOverloaded, 0},
		{"404 model", `"modelNotFound"`, wire.EngineResourceNotFound, 0},
		{"400 context", `"contextWindowExceeded"`, wire.EngineContextLengthExceeded, 0},
		{"plain 400", `"other"`, "", 0},
		{"refused", `{"responseStreamDisconnected":{"httpStatusCode":null}}`, wire.EngineConnectionFailed, 0},
		// The schema's named values.
		{"unauthorized", `"unauthorized"`, wire.EngineAuthenticationError, 0},
		{"rate limit", `"rateLimitExceeded"`, wire.EngineRateLimitExceeded, 0},
		{"usage limit", `"usageLimitExceeded"`, wire.EngineUsageLimitExceeded, 0},
		{"session budget", `"sessionBudgetExceeded"`, wire.EngineUsageLimitExceeded, 0},
		{"overloaded", `"serverOverloaded"`, wire.EngineServerOverloaded, 0},
		{"bad request", `"badRequest"`, wire.EngineInvalidRequest, 0},
		{"cyber", `"cyberPolicy"`, wire.EngineCyberPolicy, 0},
		{"bio", `"bioPolicy"`, "", 0},
		{"flex", `"flexUnavailable"`, "", 0},
		{"sandbox", `"sandboxError"`, "", 0},
		{"hook", `"inferenceHookDenied"`, "", 0},
		{"unknown string", `"somethingNew"`, "", 0},
		{"stream connect 502", `{"responseStreamConnectionFailed":{"httpStatusCode":502}}`, wire.EngineConnectionFailed, 502},
		{"http 502", `{"httpConnectionFailed":{"httpStatusCode":502}}`, wire.EngineConnectionFailed, 502},
		{"http no status", `{"httpConnectionFailed":{"httpStatusCode":null}}`, wire.EngineConnectionFailed, 0},
		{"http 500", `{"httpConnectionFailed":{"httpStatusCode":500}}`, wire.EngineServerError, 0},
		{"http 408", `{"httpConnectionFailed":{"httpStatusCode":408}}`, wire.EngineRequestTimeout, 0},
		{"http 400", `{"httpConnectionFailed":{"httpStatusCode":400}}`, wire.EngineInvalidRequest, 0},
		{"http 404", `{"httpConnectionFailed":{"httpStatusCode":404}}`, wire.EngineResourceNotFound, 0},
		{"too many, no status", `{"responseTooManyFailedAttempts":{}}`, wire.EngineConnectionFailed, 0},
		{"not steerable", `{"activeTurnNotSteerable":{"turnKind":"review"}}`, "", 0},
		{"unknown object", `{"newThing":{"httpStatusCode":500}}`, "", 0},
		{"two keys", `{"httpConnectionFailed":{},"other":{}}`, "", 0},
		{"null", `null`, "", 0},
		{"absent", ``, "", 0},
		{"number", `7`, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := engineError("We're currently experiencing high demand", json.RawMessage(c.info))
			code, status, ok := wire.ClassifyEngineFailure(f)
			if c.code == "" {
				assert.False(t, ok, "unclassified")
				assert.Empty(t, f.Code)
				return
			}
			assert.True(t, ok)
			assert.Equal(t, c.code, code)
			assert.Equal(t, c.status, status)
			if c.code != wire.EngineConnectionFailed {
				assert.Empty(t, f.HTTPStatus, "http_status only with connection_failed")
			}
		})
	}
}

// The message never decides the code: the same prose with different
// structured values classifies differently, and prose alone classifies
// nothing.
func TestClassifyIgnoresProse(t *testing.T) {
	for _, msg := range []string{"rate limit exceeded", "401 Unauthorized", "context_length_exceeded"} {
		f := engineError(msg, nil)
		_, _, ok := wire.ClassifyEngineFailure(f)
		assert.False(t, ok, msg)
		assert.Equal(t, msg, f.Error)
	}
}

func TestConnectionStatus(t *testing.T) {
	assert.Equal(t, 0, connectionStatus(json.RawMessage(`{"responseStreamDisconnected":{"httpStatusCode":null}}`)))
	assert.Equal(t, 502, connectionStatus(json.RawMessage(`{"responseStreamConnectionFailed":{"httpStatusCode":502}}`)))
	assert.Equal(t, 0, connectionStatus(json.RawMessage(`"other"`)))
}

func TestBoundTextKeepsRunes(t *testing.T) {
	s := boundText(strings.Repeat("a", 511) + "é and more")
	assert.True(t, utf8.ValidString(s))
	assert.Equal(t, strings.Repeat("a", 511)+"…", s)
}
