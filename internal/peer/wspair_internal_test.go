package peer

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/require"
)

// RawWebSocketPair dials a loopback WebSocket and returns (server side,
// client side), both closed when the test ends. The package's tests, inside
// and outside it, share this one helper.
func RawWebSocketPair(tb testing.TB) (*websocket.Conn, *websocket.Conn) {
	tb.Helper()
	accepted := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			tb.Errorf("accept: %v", err)
			return
		}
		accepted <- c
	}))
	tb.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+srv.URL[len("http"):], nil)
	require.NoError(tb, err)
	s := <-accepted
	tb.Cleanup(func() {
		_ = c.CloseNow()
		_ = s.CloseNow()
	})
	return s, c
}
