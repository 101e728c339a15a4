package main

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// The Session and Environment commands refuse what the tenancy model
// moved elsewhere, naming where it went, before any request is sent.
func TestSessionAndEnvironmentFlagsPointTheWay(t *testing.T) {
	for name, tc := range map[string]struct {
		run  func([]string, io.Writer, io.Writer) error
		args []string
		want string
	}{
		"binding":         {runSession, []string{"create", "--core", "http://127.0.0.1:1", "--kind", "k", "--binding", `{"id":"x"}`}, "agentwire env create"},
		"self_hosted":     {runSession, []string{"create", "--core", "http://127.0.0.1:1", "--kind", "k", "--env", "self_hosted"}, "--environment ID"},
		"none and env":    {runSession, []string{"create", "--core", "http://127.0.0.1:1", "--kind", "k", "--env", "none", "--environment", "e"}, "contradict"},
		"init on session": {runSession, []string{"create", "--core", "http://127.0.0.1:1", "--kind", "k", "--init-env", "A=1"}, "belong to the Environment"},
		// Usage errors: the message and the usage on stderr, exit 2.
		"list with device":   {runEnv, []string{"list", "--core", "http://127.0.0.1:1", "--device", "d"}, "flag provided but not defined: -device"},
		"create sans device": {runEnv, []string{"create", "--core", "http://127.0.0.1:1"}, "--device is required"},
	} {
		t.Run(name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := tc.run(tc.args, io.Discard, &stderr)
			require.Error(t, err)
			if errors.Is(err, errUsage) {
				require.Contains(t, stderr.String(), tc.want)
				require.Contains(t, stderr.String(), "usage: agentwire env")
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}
