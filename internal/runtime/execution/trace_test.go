package execution_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/runtime/execution"
)

// TestReplyCarriesTheRequestTrace: the Runtime's direct reply to a request
// carries the request's W3C trace context, whether a hook answered it (the
// preparing status) or the refusal of a malformed one (its rejection); a
// request with no trace or an invalid one gets replies without a trace
// (daemon-protocol.txt:67).
func TestReplyCarriesTheRequestTrace(t *testing.T) {
	const (
		traced = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		other  = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	)
	r := newRig(t, newCounting(), execution.Config{MaxActive: 4})
	prep, err := json.Marshal(prepare(sessionA))
	require.NoError(t, err)
	write := func(frame string) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, r.core.Write(ctx, []byte(frame)))
	}
	type reply struct {
		Type, ID, Trace string
		Payload         map[string]any
	}
	// replyTo reads frames up to the first of type typ for id: the
	// preparation's later statuses may come in between.
	replyTo := func(typ, id string) reply {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for {
			b, err := r.core.Read(ctx)
			require.NoError(t, err)
			var f reply
			require.NoError(t, json.Unmarshal(b, &f))
			if f.Type == typ && f.ID == id {
				return f
			}
		}
	}

	write(`{"type":"execution_prepare","id":"prepare-1","trace":"` + traced + `","payload":` + string(prep) + `}`)
	f := replyTo("preparation_status", "prepare-1")
	assert.Equal(t, "preparing", f.Payload["state"])
	assert.Equal(t, traced, f.Trace, "a hook's reply carries the request's trace")

	read := func(id, trace string) string {
		frame := `{"type":"workspace_read","id":"` + id + `",`
		if trace != "" {
			frame += `"trace":"` + trace + `",`
		}
		write(frame + `"payload":{"run_id":"run","environment_id":"8d0f3a2b-1c4e-4f5a-8b6c-7d8e9f0a1b2c","path":"../secret.txt","max_bytes":10}}`)
		f := replyTo("workspace_read_result", id)
		assert.Equal(t, "invalid_request", f.Payload["error_code"])
		return f.Trace
	}
	assert.Equal(t, other, read("read-1", other), "a malformed request's rejection carries its trace")
	assert.Empty(t, read("read-2", ""), "no trace, none on the reply")
	assert.Empty(t, read("read-3", "00-not-a-trace"), "an invalid trace is not echoed")
}
