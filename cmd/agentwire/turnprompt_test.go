package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ask(t *testing.T, input string, approveAll bool, event, data string) (string, string, string) {
	t.Helper()
	var out bytes.Buffer
	p := &prompter{in: bufio.NewReader(strings.NewReader(input)), out: &out, approveAll: approveAll}
	id, body, err := p.answer(event, data)
	require.NoError(t, err)
	b, _ := json.Marshal(body)
	return id, string(b), out.String()
}

const permEvent = `{"interaction_id":"int_1","kind":"permission","request":{"request_id":"perm-1","tool":"shell","title":"run ls"}}`
const choiceEvent = `{"interaction_id":"int_2","kind":"user_choice","request":{"ask_id":"ask-1","questions":[
	{"id":"q1","question":"colour?","options":[{"label":"red"},{"label":"blue","description":"the sky"}]},
	{"id":"q2","question":"sizes?","multi_select":true,"options":[{"label":"S"},{"label":"M"},{"label":"L"}]},
	{"id":"q3","question":"name?","options":null}]}}`

func TestPrompterPermission(t *testing.T) {
	id, body, shown := ask(t, "y\n", false, "permission_request", permEvent)
	assert.Equal(t, "int_1", id)
	assert.JSONEq(t, `{"approved":true}`, body)
	assert.Contains(t, shown, "permission shell: run ls\napprove? [y/N] ")
	_, body, _ = ask(t, "\n", false, "permission_request", permEvent)
	assert.JSONEq(t, `{"approved":false}`, body, "the default is no")
	_, body, shown = ask(t, "", false, "permission_request", permEvent)
	assert.JSONEq(t, `{"approved":false}`, body, "no answer denies")
	assert.Contains(t, shown, "no answer: denied")
	_, body, shown = ask(t, "", true, "permission_request", permEvent)
	assert.JSONEq(t, `{"approved":true}`, body)
	assert.Contains(t, shown, "approved (--approve-all)")
	id, body, _ = ask(t, "", false, "delta", `{"delta":"x"}`)
	assert.Empty(t, id)
	assert.Equal(t, "null", body, "not a question")
}

func TestPrompterChoice(t *testing.T) {
	id, body, shown := ask(t, "2\n1, 3\nAda\n", false, "prompt_for_user_choice", choiceEvent)
	assert.Equal(t, "int_2", id)
	assert.JSONEq(t, `{"question_answers":[{"question_id":"q1","answers":["blue"]},{"question_id":"q2","answers":["S","L"]},{"question_id":"q3","answers":["Ada"]}]}`, body)
	assert.Contains(t, shown, "  2) blue - the sky")
	_, body, _ = ask(t, "\n9\n\n", true, "prompt_for_user_choice", choiceEvent)
	assert.JSONEq(t, `{"question_answers":[{"question_id":"q2","answers":["9"]}]}`, body, "skipped questions stay unanswered; an unknown number is text")
	_, body, _ = ask(t, "1\n", false, "prompt_for_user_choice", choiceEvent)
	assert.JSONEq(t, `{"cancelled":true,"reason":"no answer on the terminal"}`, body)
	_, _, err := (&prompter{in: bufio.NewReader(strings.NewReader(""))}).answer("permission_request", `{}`)
	assert.Error(t, err)
}

// TestTurnRunAnswersOnTheTerminal: a real Core, a real Runtime whose
// script asks a permission question and a user-choice question, and
// `agentwire turn run` answering them from its standard input (once
// asked, once with --approve-all, once denied).
func TestTurnRunAnswersOnTheTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	bin := buildAgentwire(t)
	data := t.TempDir()
	dev := issueCredential(t, bin, data, "--kind", "device", "--device", "dev-1", "--project", "demo")
	proj := issueCredential(t, bin, data, "--kind", "project", "--project", "demo")
	core := startCore(t, bin, data)
	dir := t.TempDir()
	cred := filepath.Join(dir, "credential")
	require.NoError(t, os.WriteFile(cred, []byte(dev.Secret), 0o600))
	script := filepath.Join(dir, "script.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"steps":[
		{"permission":{"request_id":"perm-1","tool":"shell","title":"run ls"}},
		{"choice":{"ask_id":"ask-1","questions":[{"id":"q1","question":"colour?","options":[{"label":"red"},{"label":"blue"}]}]}},
		{"delta":"ok"}]}`), 0o600))
	for _, tc := range []struct {
		name, stdin, want string
		flags             []string
	}{
		{"asked", "y\n2\n", "[perm-1:allowed][ask-1:blue]ok", nil},
		{"approve-all", "1\n", "[perm-1:allowed][ask-1:red]ok", []string{"--approve-all"}},
		{"denied", "n\n\n", "[perm-1:denied][ask-1:]ok", nil},
	} {
		// A Runtime per case: question IDs are connection-scoped, and the
		// script asks the same ones every Turn.
		t.Run(tc.name, func(t *testing.T) {
			rt := exec.Command(bin, "runtime", "--core", core.base, "--device-id", "dev-1", "--credential-file", cred, "--harness", "script="+script)
			rt.Stderr = &lockedBuffer{}
			require.NoError(t, rt.Start())
			rtExited := make(chan error, 1)
			go func() { rtExited <- rt.Wait() }()
			defer func() {
				_ = rt.Process.Signal(syscall.SIGTERM)
				select {
				case <-rtExited:
				case <-time.After(20 * time.Second):
					_ = rt.Process.Kill()
					<-rtExited
				}
			}()
			ses := cliJSON(t, bin, proj.Secret, "session", "create", "--core", core.base, "--kind", "script")
			args := append([]string{"turn", "run", "--core", core.base, "--session", ses["id"].(string)}, tc.flags...)
			run := exec.Command(bin, append(args, "hi")...)
			run.Env = append(os.Environ(), "AGENTWIRE_API_KEY="+proj.Secret)
			run.Stdin = strings.NewReader(tc.stdin)
			var stderr bytes.Buffer
			run.Stderr = &stderr
			out, err := run.Output()
			require.NoError(t, err, "turn run: %s\n%s\ncore logs: %s", out, stderr.String(), core.logs.String())
			assert.Contains(t, string(out), `"content":"`+tc.want+`"`)
			assert.Contains(t, string(out), `status {"state":"completed"}`)
			assert.Contains(t, stderr.String(), "colour?")
		})
	}
}
