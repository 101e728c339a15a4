package main

import (
	"bufio"
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// SIGTERM to Core with an event stream open and a Runtime connected: the
// stream ends with a shutdown event naming where to resume, the Runtime
// gets a close frame saying why (1001, "Core is shutting down") instead of
// a bare EOF, and Core exits 0.
func TestCoreShutdownEndsStreamsAndClosesRuntimes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	e := newCrashEnv(t)
	script := e.writeFile("script.json", `{"steps":[{"delta":"partial"},{"hang":true}]}`)
	rt := e.runtime("--harness", "script="+script)
	e.waitConnected(1)
	ses := e.session("")
	turnID := e.turn(ses, "run")
	e.waitState(turnID, "running")
	e.waitMessage(turnID)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := e.api.events(ctx, turnID)
	defer resp.Body.Close()
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// Read up to the live marker: the stream is open and caught up.
	for l := range lines {
		if l == "event: live" {
			break
		}
	}

	require.NoError(t, e.core.cmd.Process.Signal(syscall.SIGTERM))
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	all := strings.Join(rest, "\n")
	assert.Contains(t, all, "event: end\ndata: {\"reason\":\"shutdown\",\"resume_after\":")
	err := <-e.core.exited
	assert.NoError(t, err, "Core exits 0:\n%s", e.core.logs.String())
	e.core.exited <- err // stop() and the cleanup read it again
	poll(t, 20*time.Second, "the Runtime logged the close", func() bool {
		return strings.Contains(rt.logs.String(), "Core is shutting down")
	})
}
