package modeltest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/runtime/harness/modeltest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// codexBody is a Responses API request body as Codex sends one, with
// input items appended after the prompt.
func codexBody(prompt string, extra ...map[string]any) map[string]any {
	input := []any{
		map[string]any{"type": "message", "role": "developer", "content": []any{
			map[string]any{"type": "input_text", "text": "<permissions instructions>"},
		}},
		map[string]any{"type": "message", "role": "user", "content": []any{
			map[string]any{"type": "input_text", "text": "<environment_context>cwd</environment_context>"},
		}},
		map[string]any{"type": "message", "role": "user", "content": []any{
			map[string]any{"type": "input_text", "text": prompt},
		}},
	}
	for _, e := range extra {
		input = append(input, e)
	}
	return map[string]any{
		"model": "gpt-5.5", "stream": true, "store": false, "instructions": "You are Codex.",
		"input":     input,
		"reasoning": map[string]any{"summary": "auto"},
		"include":   []any{"reasoning.encrypted_content"},
		"tools": []any{
			map[string]any{"type": "function", "name": "exec_command", "parameters": map[string]any{"type": "object"}},
			map[string]any{"type": "custom", "name": "apply_patch", "format": map[string]any{"type": "grammar"}},
			map[string]any{"type": "web_search"},
		},
	}
}

// claudeBody is a Messages API request body as Claude Code sends one.
func claudeBody(messages ...any) map[string]any {
	return map[string]any{
		"model": "scripted-model", "stream": true, "max_tokens": 32000,
		"system":   []any{map[string]any{"type": "text", "text": "You are Claude Code."}},
		"thinking": map[string]any{"type": "adaptive"},
		"messages": messages,
		"tools": []any{
			map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object"}},
			map[string]any{"name": "Write", "input_schema": map[string]any{"type": "object"}},
			map[string]any{"name": "mcp__aw__aw_weather", "input_schema": map[string]any{"type": "object"}},
		},
	}
}

func userText(texts ...string) map[string]any {
	blocks := []any{}
	for _, t := range texts {
		blocks = append(blocks, map[string]any{"type": "text", "text": t})
	}
	return map[string]any{"role": "user", "content": blocks}
}

// post sends body as JSON; header holds name, value pairs.
func post(t *testing.T, srv *modeltest.Server, path string, body any, header ...string) *http.Response {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL()+path, bytes.NewReader(b))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// stream posts body and reads the whole event stream, which must end
// cleanly.
func stream(t *testing.T, srv *modeltest.Server, path string, body any) []modeltest.Event {
	t.Helper()
	resp := post(t, srv, path, body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events, err := modeltest.ReadEvents(resp.Body)
	require.NoError(t, err)
	return events
}

func eventNames(events []modeltest.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.Name
	}
	return out
}

func decoded(t *testing.T, events []modeltest.Event) []map[string]any {
	t.Helper()
	out := make([]map[string]any, len(events))
	for i, e := range events {
		m, err := e.Object()
		require.NoError(t, err)
		out[i] = m
	}
	return out
}

// readJSON decodes a response body.
func readJSON(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), string(b))
	return m
}

// recordingTB is a testing.TB whose Errorf is recorded instead of failing
// the test, for the server's scripting-mistake reports.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recordingTB) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// asyncEvents reads events in the background, each sent on the channel;
// the channel is closed with the stream's end (its error, if any, sent on
// errc).
func asyncEvents(body io.Reader) (<-chan modeltest.Event, <-chan error) {
	ch := make(chan modeltest.Event)
	errc := make(chan error, 1)
	go func() {
		defer close(ch)
		er := modeltest.NewEventReader(body)
		for {
			ev, err := er.Next()
			if err != nil {
				if err != io.EOF {
					errc <- err
				}
				close(errc)
				return
			}
			ch <- ev
		}
	}()
	return ch, errc
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
