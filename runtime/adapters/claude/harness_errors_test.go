package claude

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/harness/install"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/runtime/harness/modeltest"
	"github.com/agentwire/agentwire/wire"
)

// A failed model call ends the Run with one error frame whose code comes
// from Claude Code's structured fields, then done: each provider error
// the real CLI reports, and an endpoint nobody listens on (with the
// default retries, whose time is logged: docs/harnesses.md states it).
func TestHarnessClaudeEngineErrors(t *testing.T) {
	bin := install.RequireClaude(t)
	t.Setenv(keyEnv, testKey)
	fail := func(status int, typ string) modeltest.Turn {
		return modeltest.FailWith(modeltest.HTTPError{Status: status, Type: typ, Message: "scripted " + typ})
	}
	for _, c := range []struct {
		name string
		turn modeltest.Turn
		want wire.EngineFailureCode
	}{
		{"429", fail(http.StatusTooManyRequests, "rate_limit_error"), wire.EngineRateLimitExceeded},
		{"401", fail(http.StatusUnauthorized, "authentication_error"), wire.EngineAuthenticationError},
		{"403", fail(http.StatusForbidden, "permission_error"), wire.EngineAuthenticationError},
		{"404", fail(http.StatusNotFound, "not_found_error"), wire.EngineResourceNotFound},
		{"500", fail(http.StatusInternalServerError, "api_error"), wire.EngineServerError},
		{"529", fail(529, "overloaded_error"), wire.EngineServerOverloaded},
		{"prompt_too_long", modeltest.ContextLengthExceeded(), wire.EngineContextLengthExceeded},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := modeltest.New(t, modeltest.WithFallback(modeltest.Always(c.turn)))
			got := failedRun(t, Config{Binary: bin, Model: "scripted-model", BaseURL: srv.URL(), APIKeyEnv: keyEnv, MaxRetries: -1, StateDir: t.TempDir()})
			assert.Equal(t, `"`+string(c.want)+`"`, string(got.Code), "error %q", got.Error)
			assert.Empty(t, got.HTTPStatus, "only connection_failed keeps a status")
		})
	}
	t.Run("connection_refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		dead := "http://" + l.Addr().String()
		require.NoError(t, l.Close())
		began := time.Now()
		got := failedRun(t, Config{Binary: bin, Model: "scripted-model", BaseURL: dead, APIKeyEnv: keyEnv, StateDir: t.TempDir()})
		t.Logf("a dead endpoint failed the Run after %s with the default %d retries", time.Since(began).Round(time.Millisecond), DefaultMaxRetries)
		assert.Equal(t, `"`+string(wire.EngineConnectionFailed)+`"`, string(got.Code), "error %q", got.Error)
	})
}

// failedRun runs one Turn on a new Executor of cfg and returns its one
// error frame; the Run still ends with done.
func failedRun(t *testing.T, cfg Config) wire.ErrorFrame {
	t.Helper()
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	exe, err := a.NewExecutor(ctx, harness.ExecutorConfig{SessionID: "ses-1", Declaration: a.Declaration(),
		Configuration: wire.PromptRequest{AgentKind: Kind, AgentStateKey: "agents-api-ses-1"}})
	require.NoError(t, err)
	defer func() { require.NoError(t, exe.Close(ctx)) }()
	rec := &recorder{}
	done := run(t, exe.(*executor), ctx, "run-1", "hi", rec)
	require.NotNil(t, done.Metadata, "done names the native Session")
	var errs []wire.ErrorFrame
	for _, f := range rec.all() {
		if e, ok := f.(wire.ErrorFrame); ok {
			errs = append(errs, e)
		}
	}
	require.Len(t, errs, 1, "one error frame: %s", mustJSON(t, rec.all()))
	return errs[0]
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
