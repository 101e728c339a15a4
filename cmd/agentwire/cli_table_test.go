package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliCase is one command of the CLI: its -h must succeed with its usage
// and examples, and usage, a command line it cannot use, must exit 2
// with want in the message and the command's usage after it.
type cliCase struct {
	cmd   string   // "core credential issue"
	usage []string // arguments after cmd, a usage error
	want  string
}

// cliCases holds every leaf command; TestCLITableCoversEveryCommand
// checks it against the commands the help texts list.
func cliCases(data string) []cliCase {
	d := []string{"--data", data}
	return []cliCase{
		{"core serve", append(d, "extra"), `core serve takes no arguments, got ["extra"]`},
		{"core credential issue", d, "--kind must be device, project or admin"},
		{"core credential list", append(d, "foo"), `core credential list takes no arguments, got ["foo"]`},
		{"core credential revoke", d, "want one credential ID, got 0 arguments"},
		{"core devices", nil, "--data or --store is required"},
		{"core device assign", d, "--device and --project are required"},
		{"core device revoke", d, "--device is required"},
		{"runtime", nil, "--device-id and --credential-file are required"},
		{"agent create", nil, "want FILE, got 0 arguments"},
		{"agent update", []string{"A"}, "want AGENT and FILE, got 1 arguments"},
		{"agent show", nil, "want AGENT, got 0 arguments"},
		{"agent list", []string{"x"}, "agent list takes no arguments, got 1"},
		{"session create", nil, "--kind or --agent is required"},
		{"session get", nil, "want one SESSION, got 0 arguments"},
		{"turn submit", []string{"hello"}, "--session is required"},
		{"turn run", []string{"--session", "S"}, "the Turn's text is missing"},
		{"turn attach", nil, "want one TURN, got 0 arguments"},
		{"turn input", []string{"T"}, "want TURN and the input's text"},
		{"turn answer", []string{"T", "I"}, "give one of --approve, --deny, --choose, --dismiss or --result"},
		{"turn list", nil, "--session is required"},
		{"turn status", nil, "want one TURN, got 0 arguments"},
		{"turn cancel", []string{"T1", "T2"}, "want one TURN, got 2 arguments"},
		{"devices", []string{"foo"}, `unknown command "foo"`},
		{"files ls", nil, "--session is required"},
		{"files cat", []string{"--session", "S"}, "want one PATH, got 0 arguments"},
		{"files put", []string{"--session", "S", "a"}, "want PATH and FILE, got 1 arguments"},
		{"files export", []string{"--session", "S"}, "want one OUT.tar, got 0 arguments"},
		{"files write", nil, "want one MUTATION_ID, got 0 arguments"},
		{"files resolve", []string{"M"}, "--resolution must be applied or not_applied"},
		{"vault put", nil, "want one NAME, got 0 arguments"},
		{"vault list", []string{"x"}, "vault list takes no arguments, got 1"},
		{"vault delete", []string{"a", "b"}, "want one NAME, got 2 arguments"},
		{"env create", nil, "--device is required"},
		{"env list", []string{"x"}, `env list takes no arguments, got ["x"]`},
		{"env show", nil, "want one ENV, got 0 arguments"},
		{"env suspend", []string{"E1", "E2"}, "want one ENV, got 2 arguments"},
		{"env resume", nil, "want one ENV, got 0 arguments"},
		{"demo", []string{"extra"}, `demo takes no arguments, got ["extra"]`},
		{"diagram", nil, "want one MACHINE, got 0 arguments"},
		{"check", []string{"extra"}, `check takes no arguments, got ["extra"]`},
	}
}

// exitCodes reads the exit code table of docs/cli.md.
func exitCodes(t *testing.T) map[int]string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/cli.md")
	require.NoError(t, err)
	codes := map[int]string{}
	for _, m := range regexp.MustCompile(`(?m)^\| (\d+) \| (.+) \|$`).FindAllStringSubmatch(string(doc), -1) {
		n := 0
		for _, c := range m[1] {
			n = n*10 + int(c-'0')
		}
		codes[n] = m[2]
	}
	require.Contains(t, string(doc), "`-h` prints the usage and exits 0.", "docs/cli.md says what -h does")
	return codes
}

// Every command's -h prints its usage and examples and exits 0; one
// usage error each exits 2 with a message naming the problem and the
// usage; the codes are the ones docs/cli.md documents.
func TestCLITable(t *testing.T) {
	t.Setenv(CoreEnv, "")
	t.Setenv("AGENTWIRE_API_KEY", "k")
	codes := exitCodes(t)
	require.Contains(t, codes[0], "the command did what it says")
	require.Contains(t, codes[2], "the command line was not understood: the message names the problem and the command's usage follows")
	for _, tc := range cliCases(t.TempDir()) {
		t.Run(tc.cmd, func(t *testing.T) {
			args := strings.Fields(tc.cmd)
			var out, errb bytes.Buffer
			err := run(append(args, "-h"), &out, &errb)
			assert.Equal(t, 0, exitCode(err), "-h exits 0: %v", err)
			help := out.String() + errb.String()
			assert.Contains(t, help, "usage: agentwire "+tc.cmd+" ")
			assert.Regexp(t, `\nexamples:\n  .*agentwire `, help, "the help shows examples")
			assert.Contains(t, help, "\nflags:\n")

			out.Reset()
			errb.Reset()
			err = run(append(args, tc.usage...), &out, &errb)
			assert.Equal(t, 2, exitCode(err), "a usage error exits 2: %v", err)
			msg := errb.String()
			assert.Contains(t, msg, "agentwire "+tc.cmd+": "+tc.want, "the message names the problem")
			assert.Less(t, strings.Index(msg, tc.want), strings.Index(msg, "usage: agentwire "+tc.cmd), "the usage follows the message")
			assert.Empty(t, out.String(), "nothing on stdout")
		})
	}
}

// commandList is the names a usage lists under "commands:".
func commandList(t *testing.T, args ...string) []string {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, run(append(args, "-h"), &out, &bytes.Buffer{}), "%v -h", args)
	_, list, ok := strings.Cut(out.String(), "commands:\n")
	require.True(t, ok, "%v -h lists its commands:\n%s", args, out.String())
	list, _, _ = strings.Cut(list, "\n\n")
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z][a-z-]*)\s{2,}\S`).FindAllStringSubmatch(list, -1) {
		names = append(names, m[1])
	}
	return names
}

// The table holds every command the help texts list, down to the leaves.
func TestCLITableCoversEveryCommand(t *testing.T) {
	groups := map[string]bool{"vault": true, "agent": true, "core": true, "core credential": true, "core device": true, "session": true, "turn": true, "files": true, "env": true}
	var leaves []string
	var walk func(path string, names []string)
	walk = func(path string, names []string) {
		for _, n := range names {
			cmd := strings.TrimSpace(path + " " + n)
			if groups[cmd] {
				walk(cmd, commandList(t, strings.Fields(cmd)...))
				continue
			}
			leaves = append(leaves, cmd)
		}
	}
	walk("", commandList(t))
	require.Contains(t, leaves, "turn attach")
	var tabled []string
	for _, tc := range cliCases("") {
		tabled = append(tabled, tc.cmd)
	}
	sort.Strings(leaves)
	sort.Strings(tabled)
	assert.Equal(t, leaves, tabled, "the CLI table and the help texts list the same commands")
}

// The binary's exit status is exitCode's: 0 for -h, 2 for a usage error
// (with the message), 1 for a failure, as docs/cli.md says.
func TestCLIExitStatus(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildAgentwire(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"devices", "list", "-h"}, 0, "usage: agentwire devices"},
		{[]string{"devices", "list", "extra"}, 2, `devices list takes no arguments, got ["extra"]`},
		{[]string{"core", "credential", "issue", "--data", dir, "--kind", "project", "--project", "p", "--out", filepath.Join(dir, "missing", "k")}, 1, "does not exist: create it first"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
	} {
		c := exec.Command(bin, tc.args...)
		c.Env = append(os.Environ(), CoreEnv+"=", "AGENTWIRE_API_KEY=k")
		var errb bytes.Buffer
		c.Stderr = &errb
		err := c.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, errb.String())
		assert.Contains(t, errb.String(), tc.want, "%v", tc.args)
	}
}
