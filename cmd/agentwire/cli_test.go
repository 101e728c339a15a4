package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each turn command's -h shows its own flags only, and succeeds.
func TestTurnHelpShowsOwnFlags(t *testing.T) {
	own := map[string][]string{
		"submit": {"-core", "-session"},
		"run":    {"-core", "-session", "-approve-all", "-functions", "-json"},
		"attach": {"-core", "-approve-all", "-functions", "-after", "-json"},
		"input":  {"-core", "-json"},
		"answer": {"-core", "-approve", "-deny", "-choose", "-dismiss", "-result", "-failed"},
		"list":   {"-core", "-session", "-limit", "-json"},
		"status": {"-core"},
		"cancel": {"-core"},
	}
	all := []string{"-session", "-approve-all", "-functions", "-after", "-approve", "-deny", "-choose", "-dismiss", "-result", "-failed", "-limit", "-json"}
	for cmd, flags := range own {
		t.Run(cmd, func(t *testing.T) {
			var out, errb bytes.Buffer
			require.NoError(t, run([]string{"turn", cmd, "-h"}, &out, &errb))
			help := errb.String()
			assert.Contains(t, help, "usage: agentwire turn "+cmd)
			for _, f := range all {
				want := false
				for _, o := range flags {
					want = want || o == f
				}
				listed := regexp.MustCompile(`(?m)^  ` + f + `( |$)`).MatchString(help)
				assert.Equal(t, want, listed, "%s lists %s: %v", cmd, f, want)
			}
		})
	}
}

// A command line that cannot work says what is wrong, shows the usage and
// exits 2 (errUsage); flags may follow the arguments.
func TestTurnUsageErrors(t *testing.T) {
	t.Setenv(CoreEnv, "")
	t.Setenv("AGENTWIRE_API_KEY", "k")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"turn", "run", "--session", "S"}, "the Turn's text is missing"},
		{[]string{"turn", "submit", "hello"}, "--session is required"},
		{[]string{"turn", "status"}, "want one TURN, got 0 arguments"},
		{[]string{"turn", "status", "T1", "T2"}, "want one TURN, got 2 arguments"},
		{[]string{"turn", "status", "T1"}, "--core is required (or set AGENTWIRE_CORE)"},
		{[]string{"turn", "answer", "T", "I"}, "give one of --approve, --deny, --choose, --dismiss or --result"},
		{[]string{"turn", "answer", "--result", "x", "--approve", "T", "I"}, "give one of"},
		{[]string{"turn", "answer", "--failed", "--deny", "T", "I"}, "--failed goes with --result"},
		{[]string{"turn", "answer", "--approve", "--deny", "T", "I"}, "give one of"},
		{[]string{"turn", "answer", "--choose", "nonsense", "T", "I"}, "want QUESTION=ANSWER"},
		{[]string{"turn", "input", "T"}, "want TURN and the input's text"},
		{[]string{"turn", "frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"turn", "status", "T", "--no-such-flag"}, "flag provided but not defined: -no-such-flag"},
	} {
		var out, errb bytes.Buffer
		err := run(tc.args, &out, &errb)
		assert.ErrorIs(t, err, errUsage, "%v", tc.args)
		assert.Contains(t, errb.String(), tc.want, "%v", tc.args)
		assert.Contains(t, errb.String(), "usage: agentwire turn", "%v shows the usage", tc.args)
	}
}

func TestParseFlagsTakesFlagsAnywhere(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	core := fs.String("core", "", "")
	all := fs.Bool("all", false, "")
	require.NoError(t, parseFlags(fs, []string{"T1", "--core", "http://c", "word", "--all", "--", "--not-a-flag"}))
	assert.Equal(t, "http://c", *core)
	assert.True(t, *all)
	assert.Equal(t, []string{"T1", "word", "--not-a-flag"}, fs.Args())
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run([]string{"--version"}, &out, &bytes.Buffer{}))
	assert.Regexp(t, `^agentwire \S+.*, wire version \d+\.\d+\.\d+, go`, out.String())
}

func TestSessionHelpShowsOwnFlags(t *testing.T) {
	var errb bytes.Buffer
	require.NoError(t, run([]string{"session", "get", "-h"}, &bytes.Buffer{}, &errb))
	assert.Contains(t, errb.String(), "-core")
	assert.NotContains(t, errb.String(), "-kind", "get does not list create's flags")
	errb.Reset()
	require.NoError(t, run([]string{"session", "create", "-h"}, &bytes.Buffer{}, &errb))
	assert.Contains(t, errb.String(), "-kind")
	assert.Contains(t, errb.String(), "examples:")

	t.Setenv(CoreEnv, "")
	t.Setenv("AGENTWIRE_API_KEY", "k")
	errb.Reset()
	err := run([]string{"session", "get", "S", "--core", "127.0.0.1:1"}, &bytes.Buffer{}, &errb)
	require.Error(t, err)
	assert.NotErrorIs(t, err, errUsage, "a flag after the argument is taken: the call itself fails (nothing listens)")
	errb.Reset()
	err = run([]string{"session", "create"}, &bytes.Buffer{}, &errb)
	assert.ErrorIs(t, err, errUsage)
	assert.Contains(t, errb.String(), "--kind or --agent is required")
}

func TestLogFormat(t *testing.T) {
	var b bytes.Buffer
	l, err := newLogger("json", &b, slog.LevelInfo)
	require.NoError(t, err)
	l.With("epoch", 41).Info("closed")
	assert.JSONEq(t, `{"level":"INFO","msg":"closed","epoch":41}`, dropTime(t, b.Bytes()))
	_, err = newLogger("yaml", &b, slog.LevelInfo)
	assert.ErrorContains(t, err, "want text or json")
	b.Reset()
	l, err = newLogger("", &b, slog.LevelInfo)
	require.NoError(t, err)
	l.Info("hello")
	assert.True(t, json.Valid(b.Bytes()), "not a terminal: JSON by default")
}

func dropTime(t *testing.T, b []byte) string {
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	delete(m, "time")
	out, _ := json.Marshal(m)
	return string(out)
}

// env and files subcommands list their own flags only.
func TestEnvAndFilesHelpShowOwnFlags(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		has, lack []string
	}{
		{[]string{"env", "list", "-h"}, []string{"-core"}, []string{"-device", "-init-env", "-quiet"}},
		{[]string{"env", "create", "-h"}, []string{"-device", "-quiet", "-init-env"}, []string{"-rollback"}},
		{[]string{"env", "show", "-h"}, []string{"-core"}, []string{"-rollback", "-device"}},
		{[]string{"env", "resume", "-h"}, []string{"-rollback"}, []string{"-device"}},
		{[]string{"files", "ls", "-h"}, []string{"-max-entries", "-json"}, []string{"-max-bytes"}},
		{[]string{"files", "cat", "-h"}, []string{"-max-bytes"}, []string{"-max-entries", "-json"}},
	} {
		var errb bytes.Buffer
		require.NoError(t, run(tc.args, &bytes.Buffer{}, &errb), "%v", tc.args)
		for _, f := range tc.has {
			assert.Regexp(t, `(?m)^  `+f+`( |$)`, errb.String(), "%v lists %s", tc.args, f)
		}
		for _, f := range tc.lack {
			assert.NotRegexp(t, `(?m)^  `+f+`( |$)`, errb.String(), "%v does not list %s", tc.args, f)
		}
	}
}

// Command lines that once exited 2 with nothing printed now say what is
// wrong and show the command's usage.
func TestNoSilentUsageErrors(t *testing.T) {
	t.Setenv(CoreEnv, "")
	t.Setenv("AGENTWIRE_API_KEY", "k")
	data := t.TempDir()
	for _, tc := range []struct {
		args      []string
		want, use string
	}{
		{[]string{"devices", "revoke"}, "devices revoke takes one DEVICE, got 0 arguments", "usage: agentwire devices"},
		{[]string{"devices", "revoke", "X", "Y"}, "devices revoke takes one DEVICE, got 2 arguments", "usage: agentwire devices"},
		{[]string{"devices", "foo"}, `unknown command "foo"`, "usage: agentwire devices"},
		{[]string{"devices", "list", "extra"}, `devices list takes no arguments, got ["extra"]`, "usage: agentwire devices"},
		{[]string{"devices", "list"}, "--core is required", "usage: agentwire devices"},
		{[]string{"core", "devices", "--data", data, "foo"}, `core devices takes no arguments, got ["foo"]`, "usage: agentwire core devices"},
		{[]string{"core", "serve", "--data", data, "extra"}, `core serve takes no arguments, got ["extra"]`, "usage: agentwire core serve"},
		{[]string{"demo", "extra"}, `demo takes no arguments, got ["extra"]`, "usage: agentwire demo"},
		{[]string{"core", "serve"}, "--data is required", "usage: agentwire core serve"},
		{[]string{"core", "serve", "--data", data, "--placement", "random"}, `--placement "random": want by-device-id or least-loaded`, "usage: agentwire core serve"},
		{[]string{"core", "credential", "list", "--data", data, "foo"}, `core credential list takes no arguments, got ["foo"]`, "usage: agentwire core credential list"},
		{[]string{"runtime", "--device-id", "d", "--credential-file", "f", "extra"}, `runtime takes no arguments, got ["extra"]`, "usage: agentwire runtime"},
		{[]string{"diagram", "run", "extra"}, "want one MACHINE, got 2 arguments", "usage: agentwire diagram"},
		{[]string{"files", "put", "--session", "S", "a"}, "want PATH and FILE, got 1 arguments", "usage: agentwire files put"},
	} {
		var out, errb bytes.Buffer
		err := run(tc.args, &out, &errb)
		assert.ErrorIs(t, err, errUsage, "%v", tc.args)
		assert.Contains(t, errb.String(), tc.want, "%v", tc.args)
		assert.Contains(t, errb.String(), tc.use, "%v shows the usage", tc.args)
	}
}

// The top-level help names every verb and every exit code; a subcommand's
// -h prints its own usage once, with --core optional (AGENTWIRE_CORE).
func TestHelpTexts(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run([]string{"help"}, &out, &bytes.Buffer{}))
	help := out.String()
	assert.Contains(t, help, "turn submit|run|attach|input|answer|list|status|cancel")
	assert.Contains(t, help, "agentwire devices [list] | devices revoke DEVICE")
	assert.Contains(t, help, "agentwire agent create|update|show|list")
	assert.Contains(t, help, "core serve|credential|devices|device")
	assert.Contains(t, help, "env create|list|show|suspend|resume")
	for _, code := range []string{"0 success", "1 the command failed", "2 the command line", "130 turn run or turn attach"} {
		assert.Contains(t, help, code)
	}
	for _, args := range [][]string{{"env", "show", "-h"}, {"env", "create", "-h"}, {"files", "ls", "-h"}, {"files", "cat", "-h"}, {"files", "put", "-h"}, {"files", "export", "-h"}} {
		var errb bytes.Buffer
		require.NoError(t, run(args, &bytes.Buffer{}, &errb), "%v", args)
		assert.Equal(t, 1, strings.Count(errb.String(), "usage:"), "%v prints its usage once:\n%s", args, errb.String())
		assert.NotContains(t, errb.String(), " --core URL", "%v shows --core as required", args)
	}
	for _, args := range [][]string{{"env", "-h"}, {"files", "-h"}, {"core", "-h"}, {"turn", "-h"}, {"session", "-h"}, {"core", "device", "-h"}} {
		out.Reset()
		require.NoError(t, run(args, &out, &bytes.Buffer{}), "%v", args)
		assert.Contains(t, out.String(), "usage: agentwire "+args[0], "%v", args)
		assert.NotContains(t, out.String(), " --core URL", "%v shows --core as required", args)
	}
}
