package wire

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// badCase is one entry of testdata/bad/<type>.json: a payload that breaks
// exactly one rule, and the field and rule the error must name.
type badCase struct {
	Name    string          `json:"name"`
	Payload json.RawMessage `json:"payload"`
	Field   string          `json:"field"`
	Rule    Rule            `json:"rule"`
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, "every message type needs %s", path)
	dec := json.NewDecoder(bytesReader(b))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), path)
}

// runTestdata checks one payload type against its testdata: every example
// decodes, validates and survives a round trip with no member lost, renamed
// or added; every bad case is rejected naming its field and rule.
func runTestdata[T validator](t *testing.T, typ string) {
	t.Helper()
	t.Run(typ, func(t *testing.T) {
		var examples []json.RawMessage
		readJSONFile(t, filepath.Join("testdata", "examples", typ+".json"), &examples)
		require.NotEmpty(t, examples, "%s needs at least one example", typ)
		for i, ex := range examples {
			p, err := decodePayload[T](typ, ex)
			require.NoError(t, err, "example %d", i)
			out, err := json.Marshal(p)
			require.NoError(t, err, "example %d", i)
			var want, got any
			require.NoError(t, json.Unmarshal(ex, &want))
			require.NoError(t, json.Unmarshal(out, &got))
			require.Equal(t, want, got, "example %d must round-trip member for member", i)
			again, err := decodePayload[T](typ, out)
			require.NoError(t, err, "example %d re-decoded", i)
			// Compare encodings, not structs: raw JSON members are compacted
			// on the way out, which changes their bytes but not their meaning.
			out2, err := json.Marshal(again)
			require.NoError(t, err)
			require.JSONEq(t, string(out), string(out2), "example %d", i)
		}
		var bad []badCase
		readJSONFile(t, filepath.Join("testdata", "bad", typ+".json"), &bad)
		require.NotEmpty(t, bad, "%s needs bad cases", typ)
		for _, c := range bad {
			_, err := decodePayload[T](typ, c.Payload)
			require.Error(t, err, c.Name)
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "%s: %T is not a *FieldError", c.Name, err)
			require.Equal(t, typ, fe.Type, c.Name)
			require.Equal(t, c.Field, fe.Field, "%s: wrong field (error: %v)", c.Name, err)
			require.Equal(t, c.Rule, fe.Rule, "%s: wrong rule (error: %v)", c.Name, err)
		}
	})
}
