package wire

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// seedFuzz adds the type's examples and bad cases to the fuzz corpus.
func seedFuzz(f *testing.F, typ string) {
	var examples []json.RawMessage
	if b, err := os.ReadFile(filepath.Join("testdata", "examples", typ+".json")); err == nil && json.Unmarshal(b, &examples) == nil {
		for _, ex := range examples {
			f.Add([]byte(ex))
		}
	}
	var bad []badCase
	if b, err := os.ReadFile(filepath.Join("testdata", "bad", typ+".json")); err == nil && json.Unmarshal(b, &bad) == nil {
		for _, c := range bad {
			f.Add([]byte(c.Payload))
		}
	}
	f.Add([]byte("{}"))
}

// fuzzRoundTrip: decoding never panics; what decodes re-encodes, and the
// encoding decodes back to the same value (the same strictness both ways).
func fuzzRoundTrip[T interface {
	validator
	Payload
}](t *testing.T, typ string, raw []byte) {
	p, err := decodePayload[T](typ, raw)
	if err != nil {
		var fe *FieldError
		require.ErrorAs(t, err, &fe)
		require.Equal(t, typ, fe.Type)
		return
	}
	out, err := json.Marshal(p)
	require.NoError(t, err)
	again, err := decodePayload[T](typ, out)
	require.NoError(t, err, "re-encoded payload rejected: %s", out)
	out2, err := json.Marshal(again)
	require.NoError(t, err)
	require.JSONEq(t, string(out), string(out2))
}

// FuzzDecodeFrame feeds whole frames to Decode in both directions.
func FuzzDecodeFrame(f *testing.F) {
	for _, e := range Entries() {
		var examples []json.RawMessage
		if b, err := os.ReadFile(filepath.Join("testdata", "examples", e.Type+".json")); err == nil && json.Unmarshal(b, &examples) == nil && len(examples) > 0 {
			frame, _ := json.Marshal(Envelope{Type: e.Type, ID: exampleIDFor(e, examples[0]), Payload: examples[0], Trace: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"})
			f.Add(frame)
		}
	}
	f.Add([]byte(`{"type":"nope"}`))
	// The hostile table's frames, except the few megabyte-sized ones,
	// which the mutator would only slow down.
	for _, c := range hostileCases(f) {
		if len(c.frame) <= 4<<10 {
			f.Add(c.frame)
		}
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, dir := range []Direction{CoreToRuntime, RuntimeToCore} {
			m, err := Decode(frame, dir)
			if err != nil {
				var fe *FieldError
				var re *RouteError
				require.True(t, errors.As(err, &fe) || errors.As(err, &re), "%T is neither a *FieldError nor a *RouteError", err)
				require.LessOrEqual(t, len(err.Error()), MaxErrorBytes, "error text is bounded")
				continue
			}
			require.True(t, json.Valid(frame), "accepted a frame that is not valid JSON")
			if m.Envelope.Payload != nil {
				require.Nil(t, checkJSON(m.Envelope.Payload, nil), "an accepted payload is UTF-8, repeat-free and bounded in depth")
			}
			out, err := Encode(m.ID, m.Payload, m.Trace)
			require.NoError(t, err, "a decoded frame must re-encode")
			again, err := Decode(out, dir)
			require.NoError(t, err)
			requireSamePayload(t, m.Payload, again.Payload)
		}
	})
}

// exampleID is a valid id for e's identity.
func exampleID(e *Entry) string {
	return exampleIDFor(e, nil)
}

// exampleIDFor is a valid id for e's identity that also matches the id a
// payload repeats, if it does.
func exampleIDFor(e *Entry, raw []byte) string {
	if raw != nil {
		if p, err := e.decode(raw); err == nil {
			if b, ok := p.(idBinder); ok {
				_, v := b.boundID()
				return v
			}
		}
	}
	switch {
	case e.Identity == IdentityNone || e.Identity == IdentityDevice:
		return ""
	case e.Identity.UUID():
		return "0f8fad5b-d9cb-469f-a165-70867728950e"
	}
	return "id-1"
}

// requireSamePayload compares payloads by their encoding: raw JSON members
// are compacted on re-encoding, which changes bytes but not meaning.
func requireSamePayload(t *testing.T, a, b Payload) {
	t.Helper()
	ja, err := json.Marshal(a)
	require.NoError(t, err)
	jb, err := json.Marshal(b)
	require.NoError(t, err)
	require.JSONEq(t, string(ja), string(jb))
}

// FuzzDecodeEnvelope: the envelope walk never panics; apart from the
// payload, which it leaves unparsed for the payload's decoder, it accepts
// only valid JSON objects with a type, and agrees with encoding/json on
// every member it returns.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"type":"delta","id":"r","payload":{"delta":"x","sequence":1}}`,
		`{"type":"heartbeat","payload":{"ts":1,"active_requests":0},"trace":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`,
		`{"type":"a\u0062c","id":"\n"}`, `{"type":"x","payload":null}`, `{"type":"x","payload":[]}`, `{}`, `[]`, `{"`, ` {"type" : "t" } `,
		`{"type":"x","trace":null}`, `{"type":"x","trace":{"a":[1]}}`, `{"type":"x","trace":"\ud800"}`, `{"type":"x","id":"\udfff"}`,
		`{"type":"x","id":"a","\u0069d":"b"}`, `{"type":"x","zz":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		env, err := DecodeEnvelope(frame)
		if err != nil {
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
			return
		}
		require.NotEmpty(t, env.Type)
		if env.Payload != nil && !json.Valid(env.Payload) {
			// The envelope walk leaves the payload to its own decoder;
			// the full path must refuse it.
			_, err := Decode(frame, RuntimeToCore)
			require.Error(t, err)
			_, err = Decode(frame, CoreToRuntime)
			require.Error(t, err)
			return
		}
		require.True(t, json.Valid(frame), "accepted invalid JSON")
		require.True(t, utf8.ValidString(env.Type) && utf8.ValidString(env.ID) && utf8.ValidString(env.Trace), "returned a string that is not UTF-8")
		var std struct {
			Type    string          `json:"type"`
			ID      string          `json:"id"`
			Payload json.RawMessage `json:"payload"`
			Trace   json.RawMessage `json:"trace"`
		}
		require.NoError(t, json.Unmarshal(frame, &std))
		require.Equal(t, std.Type, env.Type)
		require.Equal(t, std.ID, env.ID)
		if env.Trace != "" {
			// A kept trace is the string as written; a dropped one was not a
			// readable string (encoding/json would have repaired it).
			var trace string
			require.NoError(t, json.Unmarshal(std.Trace, &trace))
			require.Equal(t, trace, env.Trace)
		}
		if env.Payload != nil {
			require.JSONEq(t, string(std.Payload), string(env.Payload))
		}
	})
}

// FuzzCheckJSON holds the strict pass to encoding/json's grammar: it
// accepts only what encoding/json accepts, and refuses valid JSON only for
// one of its own rules (encoding, repeated member, depth), never as a
// syntax error.
func FuzzCheckJSON(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `0`, `-0.5e+3`, `"a\u00e9\ud83d\ude00"`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`,
		`"\ud800"`, "\"\xff\"", `[[[[[[[[]]]]]]]]`, `{"a":[1,{"b":null}],"c":true}`, `01`, `1.`, `"\x"`, `{"a"}`, ` `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fe := checkJSON(data, nil)
		valid := json.Valid(data)
		if fe == nil {
			require.True(t, valid, "accepted what encoding/json refuses")
			return
		}
		require.LessOrEqual(t, len(fe.Error()), MaxErrorBytes)
		if valid {
			require.NotEqual(t, RuleSyntax, fe.Rule, "refused valid JSON as a syntax error: %v", fe)
		}
	})
}
