package envinit

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/wire"
)

func TestParseAndSteps(t *testing.T) {
	s, err := Parse(json.RawMessage(`{"env":{"MODE":"test"},"files":[{"path":"/workspace/a.txt","content":"aGVsbG8="},{"path":"/workspace/empty","content":""}]}`))
	require.NoError(t, err)
	steps := s.Steps("8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c", SessionUUID("ses_1"))
	require.Len(t, steps, 3)
	assert.Equal(t, "configure", steps[0].Name)
	assert.Equal(t, wire.PrepareInitialize, steps[0].Begin.Action)
	assert.Equal(t, "/workspace/a.txt", steps[1].Name)
	assert.Equal(t, []byte("hello"), steps[1].Body)
	require.NotNil(t, steps[1].Begin.SizeBytes)
	assert.EqualValues(t, 5, *steps[1].Begin.SizeBytes)
	assert.Nil(t, steps[2].Begin.SizeBytes, "an empty file omits its size, as the reference does")
	for _, st := range steps {
		require.NoError(t, st.Begin.Validate(), st.Name)
	}
	empty, err := Parse(nil)
	require.NoError(t, err)
	assert.True(t, empty.Empty())
}

func TestParseNamesTheField(t *testing.T) {
	for body, field := range map[string]string{
		`{"files":[{"path":"/etc/passwd","content":""}]}`:                                           "files[0].path",
		`{"files":[{"path":"/workspace/a","content":""},{"path":"/workspace/a","content":"eA=="}]}`: "files[1].path",
		`{"env":{"A=B":"x"}}`: "env",
		`{"env":{}}`:          "env",
		`{"other":1}`:         "other",
		`{"files":[{"path":"/workspace/a","content":"!!"}]}`: "files",
	} {
		_, err := Parse(json.RawMessage(body))
		var fe *FieldError
		require.ErrorAs(t, err, &fe, body)
		assert.Equal(t, field, fe.Field, body)
	}
}

func TestSessionUUID(t *testing.T) {
	u := SessionUUID("ses_0123")
	assert.True(t, wire.IsCanonicalUUID(u), u)
	assert.Equal(t, u, SessionUUID("ses_0123"), "stable")
	assert.NotEqual(t, u, SessionUUID("ses_0124"))
	id := "3f2b8c1e-5d4a-4e6f-9a7b-1c2d3e4f5a6b"
	assert.Equal(t, id, SessionUUID(id))
}
