package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/agentwire/agentwire/internal/peer"
)

// TranscriptLine is one frame of a Runtime connection as the transcript
// records it: the frame exactly as it crossed the socket. Credentials
// never travel in frames (only in the upgrade's Authorization header,
// daemon-protocol.txt:13), so a frame needs no redaction.
type TranscriptLine struct {
	At     time.Time       `json:"at"`
	Device string          `json:"device"`
	Dir    string          `json:"dir"` // "in" (Runtime to Core) or "out"
	Frame  json.RawMessage `json:"frame"`
}

// transcript serializes lines from every connection onto one writer.
type transcript struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

func (t *transcript) record(device, dir string, frame []byte) {
	t.recordAt(t.now(), device, dir, frame)
}

func (t *transcript) recordAt(at time.Time, device, dir string, frame []byte) {
	if !json.Valid(frame) {
		frame, _ = json.Marshal(string(frame))
	}
	frame = redacted(frame)
	b, err := json.Marshal(TranscriptLine{At: at.UTC(), Device: device, Dir: dir, Frame: frame})
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	_, _ = t.w.Write(append(b, '\n'))
}

// recording wraps a connection's transport and records every frame read
// and every frame written successfully.
type recording struct {
	peer.Transport
	t      *transcript
	device string
}

func (r *recording) Read(ctx context.Context) ([]byte, error) {
	b, err := r.Transport.Read(ctx)
	if err == nil {
		r.t.record(r.device, "in", b)
	}
	return b, err
}

// Write records a frame written successfully at the time the write began:
// the peer may answer before the write returns, and its answer, recorded
// by the reader, must not carry the earlier time.
func (r *recording) Write(ctx context.Context, frame []byte) error {
	at := r.t.now()
	err := r.Transport.Write(ctx, frame)
	if err == nil {
		r.t.recordAt(at, r.device, "out", frame)
	}
	return err
}

// Ping keeps the wrapped transport's liveness check.
func (r *recording) Ping(ctx context.Context) error {
	if p, ok := r.Transport.(peer.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

// redacted is frame with its secrets replaced: the value of every
// bearer_token member (an MCP server's token in the Run's configuration,
// wire.MCPHTTPServer) and every value of an initialization's env (API
// keys, say: wire.RuntimePrepareInitialization). They must reach no file
// Core writes; the names stay, so the transcript still shows what was set.
func redacted(frame []byte) []byte {
	if !bytes.Contains(frame, []byte(`"bearer_token"`)) && !bytes.Contains(frame, []byte(`"env"`)) {
		return frame
	}
	var v any
	if json.Unmarshal(frame, &v) != nil {
		return []byte(`"[a frame with a bearer token that did not decode]"`)
	}
	var walk func(any)
	walk = func(x any) {
		switch y := x.(type) {
		case map[string]any:
			for k, e := range y {
				if k == "bearer_token" {
					y[k] = "[redacted]"
					continue
				}
				if env, ok := e.(map[string]any); ok && k == "env" {
					for name := range env {
						env[name] = "[redacted]"
					}
					continue
				}
				walk(e)
			}
		case []any:
			for _, e := range y {
				walk(e)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	if err != nil {
		return []byte(`"[a frame with a bearer token that did not encode]"`)
	}
	return out
}
