package chaos

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// client is one project's view of Core's public API. Core is killed and
// restarted under it, so every call may fail with a connection error;
// callers retry what is safe to retry.
type client struct {
	base, key string
	http      *http.Client
}

func newClient(base, key string) *client {
	return &client{base: base, key: key, http: &http.Client{Timeout: 10 * time.Second}}
}

// do makes one request; code 0 means no answer (Core is down, or the
// connection was cut).
func (c *client) do(ctx context.Context, method, path string, body any) (int, map[string]any) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			panic(fmt.Sprintf("chaos: marshal %s %s: %v", method, path, err))
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var v map[string]any
	_ = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v)
	return resp.StatusCode, v
}

// doRaw sends body as it is (a file's bytes) and returns the status code.
func (c *client) doRaw(ctx context.Context, method, path string, body []byte) int {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode
}

// retry calls fn until it reports done, with a backoff of 50 ms to 2 s,
// for at most budget; it reports whether fn finished.
func retry(ctx context.Context, budget time.Duration, fn func() bool) bool {
	deadline := time.Now().Add(budget)
	wait := 50 * time.Millisecond
	for {
		if fn() {
			return true
		}
		if time.Now().Add(wait).After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// sseEvent is one event of a Turn's public stream.
type sseEvent struct {
	ID   int64 // 0 for events without an id (live, status, end)
	Type string
	Data string
}

// stream reads the Turn's event stream after event after and calls fn for
// each event, until the stream ends, fn returns false or ctx ends. It
// returns the ID of the last event with one (after, when none came).
func (c *client) stream(ctx context.Context, turnID string, after int64, fn func(sseEvent) bool) int64 {
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/api/v1/turns/"+turnID+"/events", nil)
	if err != nil {
		return after
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	if after > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(after, 10))
	}
	// No client timeout: the stream lasts as long as the Turn; ctx bounds it.
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return after
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return after
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	var ev sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			ev.ID, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
		case strings.HasPrefix(line, "event: "):
			ev.Type = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.Data = strings.TrimPrefix(line, "data: ")
		case line == "" && ev.Type != "":
			if ev.ID > 0 {
				after = ev.ID
			}
			if !fn(ev) {
				return after
			}
			ev = sseEvent{}
		}
	}
	return after
}
