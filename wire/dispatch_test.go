package wire

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func frame(t testing.TB, typ, id string, payload string) []byte {
	t.Helper()
	b, err := json.Marshal(Envelope{Type: typ, ID: id, Payload: json.RawMessage(payload)})
	require.NoError(t, err)
	return b
}

func examplesOf(t testing.TB, typ string) []json.RawMessage {
	t.Helper()
	var ex []json.RawMessage
	b, err := os.ReadFile(filepath.Join("testdata", "examples", typ+".json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &ex))
	return ex
}

// TestEveryTypeThroughDecode sends every example of every type through the
// full frame path in its own direction, and checks it is refused in the
// other direction; the drive keys of the examples must name real events.
func TestEveryTypeThroughDecode(t *testing.T) {
	for _, e := range Entries() {
		for i, ex := range examplesOf(t, e.Type) {
			f := frame(t, e.Type, exampleIDFor(e, ex), string(ex))
			m, err := Decode(f, e.Direction)
			require.NoError(t, err, "%s example %d", e.Type, i)
			require.Equal(t, e, m.Entry)
			for _, tg := range m.Targets() {
				require.NotEmpty(t, tg.Event)
			}
			if len(e.Drives) > 0 && e.Drives[0].By == "" {
				require.NotEmpty(t, m.Targets(), "%s drives a machine unconditionally", e.Type)
			}
			out, err := Encode(m.ID, m.Payload, "")
			require.NoError(t, err)
			back, err := Decode(out, e.Direction)
			require.NoError(t, err)
			requireSamePayload(t, m.Payload, back.Payload)

			other := CoreToRuntime
			if e.Direction == CoreToRuntime {
				other = RuntimeToCore
			}
			_, err = Decode(f, other)
			require.ErrorIs(t, err, ErrDirection, e.Type)
		}
	}
}

func TestDecodeRejectsBadFrames(t *testing.T) {
	long := strings.Repeat("x", MaxIDBytes+1)
	ex := string(examplesOf(t, TypeDelta)[0])
	cases := []struct {
		name  string
		frame string
		field string
		rule  Rule
		is    error
	}{
		{"not json", `{"type":`, "(frame)", RuleSyntax, ErrInvalid},
		{"not an object", `[1]`, "(frame)", RuleType, ErrInvalid},
		{"unknown envelope member", `{"type":"delta","id":"r","payload":{},"extra":1}`, "extra", RuleUnknownField, ErrInvalid},
		{"missing type", `{"id":"r","payload":{}}`, "type", RuleRequired, ErrInvalid},
		{"payload not an object", `{"type":"delta","id":"r","payload":[1]}`, "payload", RuleType, ErrInvalid},
		{"trailing data", `{"type":"delta","id":"r","payload":` + ex + `} {}`, "(frame)", RuleSyntax, ErrInvalid},
		{"missing id", `{"type":"delta","payload":` + ex + `}`, "id", RuleRequired, ErrInvalid},
		{"oversized id", `{"type":"delta","id":"` + long + `","payload":` + ex + `}`, "id", RuleTooLarge, ErrTooLarge},
		{"heartbeat with an id", `{"type":"heartbeat","id":"x","payload":` + string(examplesOf(t, TypeHeartbeat)[0]) + `}`, "id", RuleForbidden, ErrInvalid},
		{"transfer id not a uuid", `{"type":"runtime_prepare_result","id":"abc","payload":` + string(examplesOf(t, TypeRuntimePrepareResult)[0]) + `}`, "id", RuleFormat, ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode([]byte(c.frame), RuntimeToCore)
			require.ErrorIs(t, err, c.is)
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "%T", err)
			require.Equal(t, c.field, fe.Field)
			require.Equal(t, c.rule, fe.Rule)
			require.NotContains(t, err.Error(), long, "an oversized id is never echoed")
		})
	}
}

func TestPromptRequestRunIDMatchesEnvelope(t *testing.T) {
	ex := examplesOf(t, TypePromptRequest)[0]
	e, _ := Lookup(TypePromptRequest)
	id := exampleIDFor(e, ex)
	_, err := Decode(frame(t, TypePromptRequest, id, string(ex)), CoreToRuntime)
	require.NoError(t, err)
	_, err = Decode(frame(t, TypePromptRequest, id+"-other", string(ex)), CoreToRuntime)
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "payload.run_id", fe.Field)
	require.Equal(t, RuleConflict, fe.Rule)
}

func TestUnknownTypeIsAnErrorNotADrop(t *testing.T) {
	_, err := Decode([]byte(`{"type":"teleport","id":"r","payload":{}}`), RuntimeToCore)
	require.ErrorIs(t, err, ErrUnknownType)
	require.Contains(t, err.Error(), `"teleport"`)
	_, err = Decode([]byte(`{"type":"`+strings.Repeat("a", 500)+`"}`), RuntimeToCore)
	require.ErrorIs(t, err, ErrUnknownType)
	require.Less(t, len(err.Error()), 120, "a peer's type is not echoed at length")
}

func TestFrameSizeLimit(t *testing.T) {
	big := make([]byte, MaxFrameBytes+1)
	_, err := Decode(big, RuntimeToCore)
	require.ErrorIs(t, err, ErrTooLarge)
}

func TestTrace(t *testing.T) {
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	tc := ParseTrace(tp)
	require.False(t, tc.Local)
	require.Equal(t, tp, tc.String())
	for _, bad := range []string{"", "garbage", "00-00000000000000000000000000000000-b7ad6b7169203331-01", "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01"} {
		got := ParseTrace(bad)
		require.True(t, got.Local, "a missing or invalid trace yields a fresh local one: %q", bad)
		require.NotEqual(t, [16]byte{}, got.TraceID)
	}
	// A frame with an invalid trace is still accepted: trace is diagnostic.
	ex := string(examplesOf(t, TypeDelta)[0])
	m, err := Decode([]byte(`{"type":"delta","id":"r","payload":`+ex+`,"trace":"not-a-trace"}`), RuntimeToCore)
	require.NoError(t, err)
	require.Equal(t, "r", m.ID, "the trace never replaces the id")
	require.Equal(t, "", ReplyTrace(strings.Repeat("t", MaxTraceBytes+1)))
	require.Equal(t, tp, ReplyTrace(tp))
}

func TestVersionIsExact(t *testing.T) {
	require.True(t, VersionCompatible(Version))
	for _, v := range []string{"", Version + "-dev", Version + "+build", "0.11", "0.11.1", "1.0.0", " " + Version} {
		require.False(t, VersionCompatible(v), v)
	}
}
