package peer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/wire"
)

// A frame the caller encoded (Outbound.Encoded, issue 25) is written as
// Encode would write it, with the trace added in place when it fits, and
// the machines still step on its payload.
func TestEncodedFrameIsWrittenWithItsTrace(t *testing.T) {
	const trace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for _, tr := range []string{"", trace} {
		ts := tables(t)
		d, err := peer.New(peer.Config{
			Role: fsm.RoleCore, Tables: ts, Router: testRouter(ts), App: newApp(t, fsm.RoleCore),
			Clock: peer.NewManualClock(time.Unix(0, 0)), Logger: quietLogger(),
		})
		require.NoError(t, err)
		p := prepare(t)
		encoded, err := wire.Encode(prepID, p, "")
		require.NoError(t, err)
		buf := make([]byte, len(encoded), len(encoded)+128)
		copy(buf, encoded)
		result := send(d, peer.Outbound{ID: prepID, Payload: p, Trace: tr, Encoded: buf})
		w, ok := d.NextWrite()
		require.True(t, ok)
		want, err := wire.Encode(prepID, p, tr)
		require.NoError(t, err)
		require.Equal(t, string(want), string(w.Frame))
		require.Equal(t, &buf[0], &w.Frame[0], "the trace is added in the caller's buffer")
		d.Written(w, nil)
		require.NoError(t, result())
		require.NotEmpty(t, state(t, d, "preparation", prepID), "the machine stepped on the payload")
	}
}
