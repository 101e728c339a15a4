package wire

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// Assertions shared by the tests of every family.

// requireFieldError asserts that err is a *FieldError naming field and
// rule; msgAndArgs describe the case.
func requireFieldError(t *testing.T, err error, field string, rule Rule, msgAndArgs ...any) {
	t.Helper()
	var fe *FieldError
	require.True(t, errors.As(err, &fe), "want a *FieldError on %s, got %v %v", field, err, msgAndArgs)
	require.Equal(t, field, fe.Field, "error: %v %v", err, msgAndArgs)
	require.Equal(t, rule, fe.Rule, "error: %v %v", err, msgAndArgs)
}

// requireAnswer asserts what an Answers method returned for the case name:
// nil when field is "", otherwise an error of message type typ naming field
// and rule.
func requireAnswer(t *testing.T, fe *FieldError, typ, field string, rule Rule, name string) {
	t.Helper()
	if field == "" {
		require.Nil(t, fe, name)
		return
	}
	require.NotNil(t, fe, name)
	require.Equal(t, typ, fe.Type, name)
	require.Equal(t, field, fe.Field, name)
	require.Equal(t, rule, fe.Rule, name)
}

func ptr[T any](v T) *T { return &v }
