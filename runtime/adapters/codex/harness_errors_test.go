package codex

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

// Provider errors end the Run with one classified error frame, then done;
// the code comes from codexErrorInfo (never the prose), and only
// connection_failed keeps an HTTP status.
func TestHarnessCodexProviderErrorsAreClassified(t *testing.T) {
	cases := []struct {
		name string
		turn modeltest.Turn
		code wire.EngineFailureCode
	}{
		{"429", modeltest.Fail(http.StatusTooManyRequests, ""), wire.EngineRateLimitExceeded},
		{"500", modeltest.Fail(http.StatusInternalServerError, ""), wire.EngineServerError},
		{"401", modeltest.Fail(http.StatusUnauthorized, ""), wire.EngineAuthenticationError},
		{"503", modeltest.Fail(http.StatusServiceUnavailable, ""), wire.EngineServerOverloaded},
		{"context", modeltest.ContextLengthExceeded(), wire.EngineContextLengthExceeded},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, nil, modeltest.WithTurns(c.turn))
			e := r.executor(hcfg(r.a, r.ws))
			ctx, cancel := context.WithTimeout(context.Background(), cliWait)
			defer cancel()
			rec := newRecorder()
			res := wait(t, start(ctx, e, "run-"+c.name, text("fail please"), rec, nil))
			require.NoError(t, res.err)
			errs := of[wire.ErrorFrame](rec)
			require.Len(t, errs, 1, kinds(rec))
			code, status, ok := wire.ClassifyEngineFailure(errs[0])
			require.True(t, ok, "classified: %+v", errs[0])
			assert.Equal(t, c.code, code)
			assert.Zero(t, status)
			assert.Equal(t, turnFailed, e.status())
			require.NotNil(t, res.done.Metadata, "done follows the error with the native Session")
			assert.Equal(t, e.threadID, res.done.Metadata.AgentSessionID)
		})
	}
}

// A refused connection: Codex retries it forever; the adapter's own
// deadline ends the Run with connection_failed, then done.
func TestHarnessCodexRefusedConnectionEndsWithinTheDeadline(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	const deadline = 3 * time.Second
	r := newRig(t, func(c *Config) {
		c.BaseURL = "http://127.0.0.1:" + strconv.Itoa(port) + "/v1"
		c.ConnectDeadline = deadline
	})
	e := r.executor(hcfg(r.a, r.ws))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	rec := newRecorder()
	began := time.Now()
	res := wait(t, start(ctx, e, "run-refused", text("hello?"), rec, nil))
	took := time.Since(began)
	require.NoError(t, res.err)
	errs := of[wire.ErrorFrame](rec)
	require.Len(t, errs, 1)
	code, _, ok := wire.ClassifyEngineFailure(errs[0])
	require.True(t, ok)
	assert.Equal(t, wire.EngineConnectionFailed, code)
	assert.GreaterOrEqual(t, took, deadline, "Codex's retries ran until the adapter's deadline")
	assert.Less(t, took, deadline+DefaultInterruptWait, "and the Run ended right after it")
	assert.Equal(t, turnInterrupted, e.status(), "the turn was interrupted natively")
	assert.Empty(t, r.srv.TurnRequests())
}

// A connection dropped mid-stream: with stream retries at 0, Codex fails
// the turn at once with codexErrorInfo "other" (measured on 0.171.0),
// which the classification deliberately leaves without a code (errors.go:
// "other" names no accepted category, and the message "stream
// disconnected…" is prose, never read). So the Run ends with one
// unclassified error frame, then done keeping what streamed before the
// drop; it never waits for a stream that will not finish.
func TestHarnessCodexDroppedStreamEndsWithAnError(t *testing.T) {
	r := newRig(t, nil, modeltest.WithTurns(modeltest.Reply(modeltest.Text("partial"), modeltest.Drop())))
	e := r.executor(hcfg(r.a, r.ws))
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	rec := newRecorder()
	res := wait(t, start(ctx, e, "run-drop", text("answer, please"), rec, nil))
	require.NoError(t, res.err)
	errs := of[wire.ErrorFrame](rec)
	require.Len(t, errs, 1, kinds(rec))
	_, _, classified := wire.ClassifyEngineFailure(errs[0])
	assert.False(t, classified, "Codex's structured value names no accepted code: %+v", errs[0])
	assert.Nil(t, errs[0].Code)
	assert.Nil(t, errs[0].HTTPStatus)
	assert.NotEmpty(t, errs[0].Error, "the text says what happened")
	assert.Equal(t, turnFailed, e.status(), "Codex ended the turn itself, not the adapter's connection deadline")
	assert.Equal(t, "partial", res.done.Content, "done keeps what streamed before the drop")
	assert.Equal(t, res.done.Content, contentOf(rec))
	require.NotNil(t, res.done.Metadata, "done follows the error with the native Session")
	assert.Equal(t, e.threadID, res.done.Metadata.AgentSessionID)
	assert.Len(t, r.srv.TurnRequests(), 1, "the dropped stream was not retried")

	// The Executor stays usable for the next Turn.
	rec2 := newRecorder()
	res2 := wait(t, start(ctx, e, "run-after-drop", text("Say hello"), rec2, nil))
	require.NoError(t, res2.err)
	assert.Empty(t, of[wire.ErrorFrame](rec2))
	assert.Equal(t, "Hello from the scripted model.", res2.done.Content)
}
