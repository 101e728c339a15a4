package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func ask(t *testing.T, input string, approveAll bool, event, data string) (string, string, string) {
	t.Helper()
	var out bytes.Buffer
	p := &prompter{in: bufio.NewReader(strings.NewReader(input)), out: &out, approveAll: approveAll, interactive: true}
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
	id, body, shown = ask(t, "", false, "permission_request", permEvent)
	assert.Empty(t, id)
	assert.Equal(t, "null", body, "the end of the input answers nothing")
	assert.Contains(t, shown, "questions are left for another client (the standard input ended)")
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
	_, body, shown = ask(t, "1\n", false, "prompt_for_user_choice", choiceEvent)
	assert.Equal(t, "null", body, "an input that ends before the last question answers none of them")
	assert.Contains(t, shown, "left for another client")
	_, _, err := (&prompter{in: bufio.NewReader(strings.NewReader(""))}).answer("permission_request", `{}`)
	assert.Error(t, err)
}

// A prompter whose input is not a terminal asks nothing and answers
// nothing (but --approve-all), and says so once.
func TestPrompterNotATerminal(t *testing.T) {
	var out bytes.Buffer
	p := &prompter{in: bufio.NewReader(strings.NewReader("y\n")), out: &out, turn: "turn_1"}
	for _, ev := range []struct{ name, data string }{{"permission_request", permEvent}, {"prompt_for_user_choice", choiceEvent}} {
		id, body, err := p.answer(ev.name, ev.data)
		require.NoError(t, err)
		assert.Empty(t, id, ev.name)
		assert.Nil(t, body, ev.name)
	}
	assert.Equal(t, 1, strings.Count(out.String(), "questions are left for another client (the standard input is not a terminal)"), out.String())
	assert.Contains(t, out.String(), "agentwire turn answer turn_1 INTERACTION")
	assert.NotContains(t, out.String(), "approve?")
	p.approveAll = true
	_, body, err := p.answer("permission_request", permEvent)
	require.NoError(t, err)
	assert.Equal(t, map[string]any{"approved": true}, body, "--approve-all is the user's explicit answer")
}

// TestTurnRunAnswersOnTheTerminal: a real Core, a real Runtime whose
// script asks a permission question and a user-choice question, and
// `agentwire turn run` answering them on a terminal (once asked, once
// with --approve-all, once denied); with a pipe instead, it leaves the
// question to another client, which answers with turn answer.
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
		pipe              bool
	}{
		{"asked", "y\n2\n", "[perm-1:allowed][ask-1:blue]ok", nil, false},
		{"approve-all", "1\n", "[perm-1:allowed][ask-1:red]ok", []string{"--approve-all"}, false},
		{"denied", "n\n\n", "[perm-1:denied][ask-1:]ok", nil, false},
		{"not a terminal", "2\n", "[perm-1:allowed][ask-1:red]ok", []string{"--approve-all"}, true},
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
			if tc.pipe {
				run.Stdin = strings.NewReader(tc.stdin) // never read
			} else {
				term, tty := openPTY(t)
				_, err := term.WriteString(tc.stdin)
				require.NoError(t, err)
				run.Stdin = tty
			}
			stderr := &lockedBuffer{}
			run.Stderr = stderr
			stdout, err := run.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, run.Start())
			killer := time.AfterFunc(2*time.Minute, func() { _ = run.Process.Kill() }) // a failure bound
			defer killer.Stop()
			var out strings.Builder
			lines := bufio.NewScanner(stdout)
			for lines.Scan() {
				out.WriteString(lines.Text() + "\n")
				if ev, data, _ := strings.Cut(lines.Text(), " "); tc.pipe && ev == "prompt_for_user_choice" {
					// Another client answers what turn run left.
					require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "questions are left for another client") }, 20*time.Second, 10*time.Millisecond)
					var q struct {
						InteractionID string `json:"interaction_id"`
					}
					require.NoError(t, json.Unmarshal([]byte(data), &q))
					answer := exec.Command(bin, "turn", "answer", "--core", core.base, "--choose", "q1=red", turnIDOf(t, out.String()), q.InteractionID)
					answer.Env = run.Env
					b, err := answer.CombinedOutput()
					require.NoError(t, err, string(b))
				}
			}
			require.NoError(t, run.Wait(), "turn run: %s\n%s\ncore logs: %s", out.String(), stderr.String(), core.logs.String())
			assert.Contains(t, out.String(), `"content":"`+tc.want+`"`)
			assert.Contains(t, out.String(), `status {"state":"completed"}`)
			if tc.pipe {
				assert.Equal(t, 1, strings.Count(stderr.String(), "questions are left for another client (the standard input is not a terminal)"), stderr.String())
				assert.NotContains(t, stderr.String(), "colour?")
				return
			}
			assert.Contains(t, stderr.String(), "colour?")
		})
	}
}

// Following a Turn from its start replays the questions it asked: one
// whose outcome is already in the stream is not asked again; one still
// open is asked once the stream has caught up, and answered.
func TestFollowAsksOnlyOpenQuestions(t *testing.T) {
	perm := func(id string) string { return strings.Replace(permEvent, `"int_1"`, `"`+id+`"`, 1) }
	var mu sync.Mutex
	var posted []string
	answered := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/interactions/") {
			mu.Lock()
			posted = append(posted, r.URL.Path)
			if len(posted) == 1 {
				close(answered)
			}
			mu.Unlock()
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, `{"interaction_id":"x","delivery_id":"d"}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "id: 1\nevent: permission_request\ndata: %s\n\n", perm("int_settled"))
		fmt.Fprint(w, "id: 2\nevent: interaction_outcome\ndata: {\"interaction_id\":\"int_settled\",\"outcome\":\"applied\"}\n\n")
		fmt.Fprintf(w, "id: 3\nevent: permission_request\ndata: %s\n\n", perm("int_open"))
		// Nothing is asked before Core says the history was sent.
		w.(http.Flusher).Flush()
		mu.Lock()
		early := len(posted)
		mu.Unlock()
		assert.Zero(t, early, "no question is answered before the live event")
		fmt.Fprint(w, "event: live\ndata: {\"after\":3}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-answered:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "event: status\ndata: {\"state\":\"completed\"}\n\n")
	}))
	defer srv.Close()
	var out, shown bytes.Buffer
	p := &prompter{in: bufio.NewReader(strings.NewReader("y\n")), out: &shown, interactive: true}
	require.NoError(t, (&apiClient{base: srv.URL, key: "k"}).follow("turn_1", "", &out, p))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"/api/v1/turns/turn_1/interactions/int_open"}, posted, "only the open question is answered")
	assert.Equal(t, 1, strings.Count(shown.String(), "approve?"), "asked once:\n%s", shown.String())
	assert.Contains(t, out.String(), `answer int_open {"approved":true}`)
}

// turnIDOf is the Turn ID of turn run's first line ("turn ID").
func turnIDOf(t *testing.T, out string) string {
	t.Helper()
	first, _, _ := strings.Cut(out, "\n")
	id, ok := strings.CutPrefix(first, "turn ")
	require.True(t, ok, first)
	return id
}

// After the live event a question is asked as it comes, even while
// other events keep coming.
func TestFollowAsksANewQuestionAtOnce(t *testing.T) {
	answered := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/interactions/") {
			once.Do(func() { close(answered) })
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprint(w, `{"interaction_id":"int_1","delivery_id":"d"}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: live\ndata: {\"after\":0}\n\n")
		fmt.Fprintf(w, "id: 1\nevent: permission_request\ndata: %s\n\n", permEvent)
		fmt.Fprint(w, "id: 2\nevent: delta\ndata: {\"delta\":\".\"}\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-answered:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, "event: status\ndata: {\"state\":\"completed\"}\n\n")
	}))
	defer srv.Close()
	var out, shown bytes.Buffer
	p := &prompter{in: bufio.NewReader(strings.NewReader("y\n")), out: &shown, interactive: true}
	require.NoError(t, (&apiClient{base: srv.URL, key: "k"}).follow("turn_1", "", &out, p), shown.String())
	assert.Contains(t, out.String(), `answer int_1 {"approved":true}`)
	assert.NotContains(t, out.String(), "live", "the marker is not printed")
}
