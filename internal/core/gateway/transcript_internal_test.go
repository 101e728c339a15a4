package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/peer"
)

// slowWrite is a transport whose Write returns only once the test let it.
type slowWrite struct {
	peer.Transport
	inWrite, release chan struct{}
}

func (s *slowWrite) Write(context.Context, []byte) error {
	close(s.inWrite)
	<-s.release
	return nil
}

// An answer the peer sends while Core's write is still returning is
// recorded after that write, never before it: the written frame carries
// the time its write began.
func TestTranscriptRecordsAWriteWhenItBegan(t *testing.T) {
	var out bytes.Buffer
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Millisecond)
		return now
	}
	tr := &transcript{w: &out, now: clock}
	st := &slowWrite{inWrite: make(chan struct{}), release: make(chan struct{})}
	r := &recording{Transport: st, t: tr, device: "dev-1"}
	done := make(chan error, 1)
	go func() { done <- r.Write(context.Background(), []byte(`{"type":"prompt_steer"}`)) }()
	<-st.inWrite
	tr.record("dev-1", "in", []byte(`{"type":"prompt_steer_ack"}`)) // the reader's, meanwhile
	close(st.release)
	require.NoError(t, <-done)

	var lines []TranscriptLine
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var tl TranscriptLine
		require.NoError(t, json.Unmarshal([]byte(l), &tl))
		lines = append(lines, tl)
	}
	require.Len(t, lines, 2)
	byDir := map[string]time.Time{lines[0].Dir: lines[0].At, lines[1].Dir: lines[1].At}
	assert.True(t, byDir["out"].Before(byDir["in"]), "the write began before the answer was read: %v", lines)
}

// A bearer token in a frame (an MCP server's, from the Vault) never
// reaches the transcript file; the rest of the frame does.
func TestTranscriptRedactsBearerTokens(t *testing.T) {
	var buf bytes.Buffer
	tr := &transcript{w: &buf, now: time.Now}
	frame := []byte(`{"type":"execution_prepare","id":"p1","payload":{"configuration":{"mcp_http_servers":[{"server_label":"docs","bearer_token":"tok-123"},{"server_label":"open"}]}}}`)
	tr.record("dev-1", "out", frame)
	assert.NotContains(t, buf.String(), "tok-123")
	assert.Contains(t, buf.String(), `"bearer_token":"[redacted]"`)
	assert.Contains(t, buf.String(), `"server_label":"docs"`)

	buf.Reset()
	tr.record("dev-1", "out", []byte(`{"type":"runtime_prepare","id":"t1","payload":{"step":"configure","initialization":{"action":"configure","env":{"OPENAI_API_KEY":"sk-live-1"}}}}`))
	assert.NotContains(t, buf.String(), "sk-live-1")
	assert.Contains(t, buf.String(), `"OPENAI_API_KEY":"[redacted]"`, "the name stays")

	buf.Reset()
	plain := []byte(`{"type":"heartbeat","payload":{"ts":1}}`)
	tr.record("dev-1", "in", plain)
	assert.Contains(t, buf.String(), string(plain), "a frame without a token is kept byte for byte")
}
