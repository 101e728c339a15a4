package wire

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClassifyEngineFailure(t *testing.T) {
	type want struct {
		code   EngineFailureCode
		status int
		ok     bool
	}
	unclassified := want{}
	cases := []struct {
		name   string
		code   string // raw JSON, "" for absent
		status string // raw JSON, "" for absent
		want   want
	}{
		{"no classification", "", "", unclassified},
		{"status without code", "", "502", unclassified},
		{"null code", "null", "", unclassified},
		{"code a number", "7", "", unclassified},
		{"code an object", `{"code":"server_error"}`, "", unclassified},
		{"code an array", `["server_error"]`, "", unclassified},
		{"unknown code", `"teapot"`, "", unclassified},
		{"empty code", `""`, "", unclassified},
		{"code in upper case", `"SERVER_ERROR"`, "", unclassified},
		{"code with spaces", `" server_error"`, "", unclassified},
		{"unknown code keeps no status", `"teapot"`, "418", unclassified},
		{"connection_failed 100", `"connection_failed"`, "100", want{EngineConnectionFailed, 100, true}},
		{"connection_failed 502", `"connection_failed"`, "502", want{EngineConnectionFailed, 502, true}},
		{"connection_failed 599", `"connection_failed"`, "599", want{EngineConnectionFailed, 599, true}},
		{"connection_failed 99", `"connection_failed"`, "99", want{EngineConnectionFailed, 0, true}},
		{"connection_failed 600", `"connection_failed"`, "600", want{EngineConnectionFailed, 0, true}},
		{"connection_failed 0", `"connection_failed"`, "0", want{EngineConnectionFailed, 0, true}},
		{"connection_failed -502", `"connection_failed"`, "-502", want{EngineConnectionFailed, 0, true}},
		{"connection_failed fractional", `"connection_failed"`, "502.5", want{EngineConnectionFailed, 0, true}},
		{"connection_failed 502.0", `"connection_failed"`, "502.0", want{EngineConnectionFailed, 0, true}},
		{"connection_failed exponent", `"connection_failed"`, "5.02e2", want{EngineConnectionFailed, 0, true}},
		{"connection_failed string status", `"connection_failed"`, `"502"`, want{EngineConnectionFailed, 0, true}},
		{"connection_failed null status", `"connection_failed"`, "null", want{EngineConnectionFailed, 0, true}},
		{"connection_failed bool status", `"connection_failed"`, "true", want{EngineConnectionFailed, 0, true}},
		{"connection_failed object status", `"connection_failed"`, `{"status":502}`, want{EngineConnectionFailed, 0, true}},
		{"connection_failed huge status", `"connection_failed"`, "99999999999999999999999", want{EngineConnectionFailed, 0, true}},
		{"connection_failed no status", `"connection_failed"`, "", want{EngineConnectionFailed, 0, true}},
		{"status with another code", `"server_error"`, "502", want{EngineServerError, 0, true}},
		{"boundary status with another code", `"rate_limit_exceeded"`, "100", want{EngineRateLimitExceeded, 0, true}},
		{"malformed status with another code", `"server_error"`, "502.5", want{EngineServerError, 0, true}},
	}
	// Every accepted code classifies as itself, with and without a status.
	for _, code := range EngineFailureCodes() {
		for _, status := range []string{"", "503"} {
			w := want{code, 0, true}
			if code == EngineConnectionFailed && status != "" {
				w.status = 503
			}
			cases = append(cases, struct {
				name   string
				code   string
				status string
				want   want
			}{"code " + string(code) + " status " + status, `"` + string(code) + `"`, status, w})
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			payload := map[string]json.RawMessage{"error": json.RawMessage(`"boom"`)}
			if tc.code != "" {
				payload["code"] = json.RawMessage(tc.code)
			}
			if tc.status != "" {
				payload["http_status"] = json.RawMessage(tc.status)
			}
			raw, err := json.Marshal(payload)
			require.NoError(t, err)
			// The frame itself is always valid, whatever its classification.
			e, err := decodePayload[ErrorFrame]("error", raw)
			require.NoError(t, err)
			code, status, ok := ClassifyEngineFailure(e)
			require.Equal(t, tc.want, want{code, status, ok})
			// Classification never alters the frame: it re-encodes as received.
			out, err := json.Marshal(e)
			require.NoError(t, err)
			require.JSONEq(t, string(raw), string(out))
		})
	}
}

// Bytes that cannot arrive from the wire (they are not JSON) can still be
// built locally; the classifier discards them without failing.
func TestClassifyEngineFailureConstructed(t *testing.T) {
	for _, status := range []string{"0502", "+502", "502 ", " 502", "", "-", "5_02", "0x1f6"} {
		e := ErrorFrame{Error: "x", Code: NativeJSON(`"connection_failed"`), HTTPStatus: NativeJSON(status)}
		code, got, ok := ClassifyEngineFailure(e)
		require.True(t, ok, status)
		require.Equal(t, EngineConnectionFailed, code)
		if status == "502 " || status == " 502" {
			require.Equal(t, 502, got, "surrounding whitespace is not part of the value")
		} else {
			require.Zero(t, got, status)
		}
	}
}

func TestEngineFailureCodes(t *testing.T) {
	codes := EngineFailureCodes()
	require.Len(t, codes, 11)
	seen := map[EngineFailureCode]bool{}
	for _, c := range codes {
		require.True(t, c.Valid(), c)
		require.False(t, seen[c], c)
		seen[c] = true
	}
	require.False(t, EngineFailureCode("").Valid())
	require.False(t, EngineFailureCode("engine_failed").Valid())
}

func TestNewEngineError(t *testing.T) {
	for _, tc := range []struct {
		code   EngineFailureCode
		status int
		json   string
	}{
		{"", 0, `{"error":"boom"}`},
		{"", 502, `{"error":"boom"}`},
		{EngineServerError, 0, `{"error":"boom","code":"server_error"}`},
		{EngineServerError, 502, `{"error":"boom","code":"server_error"}`},
		{EngineConnectionFailed, 0, `{"error":"boom","code":"connection_failed"}`},
		{EngineConnectionFailed, 600, `{"error":"boom","code":"connection_failed"}`},
		{EngineConnectionFailed, 502, `{"error":"boom","code":"connection_failed","http_status":502}`},
	} {
		e := NewEngineError("boom", tc.code, tc.status)
		require.NoError(t, e.Validate())
		out, err := json.Marshal(e)
		require.NoError(t, err)
		require.JSONEq(t, tc.json, string(out))
		code, status, ok := ClassifyEngineFailure(e)
		require.Equal(t, tc.code != "", ok)
		require.Equal(t, tc.code, code)
		if tc.code == EngineConnectionFailed && tc.status == 502 {
			require.Equal(t, 502, status)
		} else {
			require.Zero(t, status)
		}
	}
}

func TestErrorFrameRejectsUnencodableRawMembers(t *testing.T) {
	// Only a locally built frame can hold bytes that are not JSON; it is
	// rejected before it could fail inside json.Marshal.
	err := ErrorFrame{Error: "boom", HTTPStatus: NativeJSON("50 2")}.Validate()
	requireFieldError(t, err, "http_status", RuleSyntax)
	err = ErrorFrame{Error: "boom", Code: NativeJSON(`"x`)}.Validate()
	requireFieldError(t, err, "code", RuleSyntax)
}

func TestUsageReplaceIsNotAdditive(t *testing.T) {
	ten, five := int32(10), int32(5)
	cost := 0.5
	prev := Usage{Tokens: NewTokenUsage(100, 10, 20, 5, 120), InputTokens: &ten, CostUSD: &cost, Model: "m"}
	next := Usage{InputTokens: &five}

	got := next.Replace(prev)
	require.Equal(t, next, got, "the new snapshot wins entirely")
	require.Nil(t, got.Tokens, "a measurement the new snapshot omits is unknown, not inherited")
	require.Nil(t, got.CostUSD)
	require.Empty(t, got.Model)
	require.Equal(t, int32(5), *got.InputTokens, "counts are replaced, never added")

	// The result shares no memory with either snapshot.
	*got.InputTokens = 99
	require.Equal(t, int32(5), *next.InputTokens)
	full := prev.Replace(Usage{})
	*full.Tokens.TotalTokens = 1
	require.Equal(t, int64(120), *prev.Tokens.TotalTokens)
}

func TestUsageAbsentIsUnknownNotZero(t *testing.T) {
	u, err := decodePayload[Usage]("usage", []byte(`{"output_tokens":0}`))
	require.NoError(t, err)
	require.Nil(t, u.InputTokens, "absent is unknown")
	require.NotNil(t, u.OutputTokens, "an explicit zero is a measurement")
	require.Zero(t, *u.OutputTokens)
	out, err := json.Marshal(u)
	require.NoError(t, err)
	require.JSONEq(t, `{"output_tokens":0}`, string(out))

	// Inside done, the zero snapshot means no usage and is omitted.
	out, err = json.Marshal(Done{Content: "x"})
	require.NoError(t, err)
	require.JSONEq(t, `{"content":"x"}`, string(out))
	require.NoError(t, Done{}.Validate())
	require.False(t, Usage{}.IsKnown())
}

func TestTokenUsageMustBeComplete(t *testing.T) {
	tok := NewTokenUsage(1, 0, 1, 0, 2)
	tok.ReasoningOutputTokens = nil
	requireFieldError(t, Usage{Tokens: tok}.Validate(), "tokens.reasoning_output_tokens", RuleRequired)
	// Through done, the path is rooted at the usage member.
	requireFieldError(t, Done{Usage: Usage{Tokens: tok}}.Validate(), "usage.tokens.reasoning_output_tokens", RuleRequired)
}

func TestToolCallRawMembersRoundTrip(t *testing.T) {
	// A null output and a present empty content list are observations of
	// their own and survive a round trip; absent members stay absent.
	raw := `{"id":"c","name":"n","stage":"after","observation":{"kind":"mcp","status":"in_progress","output":null,"content":[]}}`
	p, err := decodePayload[ToolCall]("tool_call", []byte(raw))
	require.NoError(t, err)
	require.Equal(t, NativeJSON("null"), p.Observation.Output)
	require.Nil(t, p.Observation.Error)
	require.NotNil(t, p.Observation.Content)
	require.Empty(t, *p.Observation.Content)
	out, err := json.Marshal(p)
	require.NoError(t, err)
	require.JSONEq(t, raw, string(out))
}

func TestRunEventTypesOfErrors(t *testing.T) {
	_, err := decodePayload[ToolCall]("tool_call", []byte(`{"id":"c","name":"n","stage":"after","observation":{"kind":"k","status":"s","x":1}}`))
	var fe *FieldError
	require.True(t, errors.As(err, &fe))
	require.Equal(t, "tool_call", fe.Type)
	require.ErrorIs(t, err, ErrInvalid)
}

// TestRunEventsNeverPanic feeds every prefix of every example, and a few
// mutations, to the decoders: each must return, valid or not.
func TestRunEventsNeverPanic(t *testing.T) {
	decoders := map[string]func([]byte){
		"delta":          func(b []byte) { _, _ = decodePayload[Delta]("delta", b) },
		"thinking":       func(b []byte) { _, _ = decodePayload[Thinking]("thinking", b) },
		"output_message": func(b []byte) { _, _ = decodePayload[OutputMessage]("output_message", b) },
		"tool_call": func(b []byte) {
			if p, err := decodePayload[ToolCall]("tool_call", b); err == nil {
				_, _ = json.Marshal(p)
			}
		},
		"usage": func(b []byte) { _, _ = decodePayload[Usage]("usage", b) },
		"error": func(b []byte) {
			p, _ := decodePayload[ErrorFrame]("error", b)
			_, _, _ = ClassifyEngineFailure(p)
		},
		"done":      func(b []byte) { _, _ = decodePayload[Done]("done", b) },
		"heartbeat": func(b []byte) { _, _ = decodePayload[Heartbeat]("heartbeat", b) },
	}
	for typ, decode := range decoders {
		b, err := os.ReadFile(filepath.Join("testdata", "examples", typ+".json"))
		require.NoError(t, err)
		var examples []json.RawMessage
		require.NoError(t, json.Unmarshal(b, &examples))
		for _, ex := range examples {
			for i := 0; i <= len(ex); i++ {
				decode(ex[:i])
			}
			for _, m := range [][]byte{[]byte("null"), []byte("[]"), []byte(`{"":null}`), append(append([]byte{}, ex...), '}')} {
				decode(m)
			}
		}
	}
}
