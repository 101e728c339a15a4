package script_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
)

func TestParseReadsDurationsAsStrings(t *testing.T) {
	s, err := script.Parse("steps.json", []byte(`{"steps":[{"delta":"a"},{"delay":"150ms"},{"delta":"b"}],"session_id":"n-1"}`))
	require.NoError(t, err)
	require.Len(t, s.Steps, 3)
	assert.Equal(t, 150*time.Millisecond, time.Duration(s.Steps[1].Delay))
	assert.Equal(t, "n-1", s.SessionID)
}

// Every mistake is refused with the file, the line and what is wrong.
func TestParseRefusesWithFileLineAndField(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"duration as a number", "{\"steps\":[\n{\"delay\":2000000000}]}", `steps.json:2: `},
		{"duration unparsable", "{\"steps\":[\n{\"delay\":\"soon\"}]}", `duration "soon"`},
		{"unknown step field", "{\"steps\":[\n{\"delta\":\"a\"},\n{\"detla\":\"b\"}]}", `steps.json:3: unknown field "detla"`},
		{"unknown top-level field", "{\"stpes\":[]}", `steps.json:1: unknown field "stpes"`},
		{"wrong type", "{\"steps\":[\n{\"hang\":\"yes\"}]}", `steps.json:2: steps.hang: a string where the format has a bool`},
		{"not JSON", "{\"steps\":[\n{\"delta\":}]}", `steps.json:2: not valid JSON`},
		{"two actions", "{\"steps\":[\n{\"delta\":\"a\"},\n  {\"delta\":\"b\",\"hang\":true}]}", `steps.json:3: steps[1]: a step sets one action; this one sets delta and hang`},
		{"no action", "{\"steps\":[{}]}", `steps[0]: a step sets one action`},
		{"withdraw alone", "{\"steps\":[{\"withdraw\":true}]}", `withdraw goes with permission`},
		{"unknown input mode", `{"steps":[],"input":"sometimes"}`, `input "sometimes"`},
		{"trailing data", `{"steps":[]} {}`, `data after the script's object`},
		{"empty", ``, `empty`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := script.Parse("steps.json", []byte(tc.text))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
