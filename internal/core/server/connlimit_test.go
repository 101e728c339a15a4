package server_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/core/server"
)

// TestLimitListenerCaps holds connections open over real TCP on loopback
// from two client addresses (127.0.0.1 and 127.0.0.2): the per-client cap
// refuses a client's third connection while another client still gets
// in, the total cap refuses the next one, each refusal is a 503 with
// Retry-After, and a closed connection gives its slot back.
func TestLimitListenerCaps(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	l := &server.LimitListener{Listener: ln, Max: 3, PerClient: 2, RetryAfter: 7}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })}
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(l) }()
	t.Cleanup(func() { _ = hs.Close(); <-done })

	type client struct {
		c  net.Conn
		rd *bufio.Reader
	}
	dial := func(from string) client {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 10 * time.Second}
		c, err := d.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		// A safety bound only: every answer here comes at once.
		require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
		return client{c, bufio.NewReader(c)}
	}
	get := func(cl client) *http.Response {
		_, err := cl.c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		if err != nil {
			return nil
		}
		resp, err := http.ReadResponse(cl.rd, nil)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp
	}
	// refused reads the answer a refused connection gets before anything
	// is sent, then the end of the connection.
	refused := func(cl client, why string) {
		resp, err := http.ReadResponse(cl.rd, nil)
		require.NoError(t, err, why)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Contains(t, string(body), "too_many_connections", why)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, why)
		assert.Equal(t, "7", resp.Header.Get("Retry-After"), why)
		_, err = cl.rd.ReadByte()
		assert.Error(t, err, "%s: the refused connection is closed", why)
	}

	a1, a2 := dial("127.0.0.1"), dial("127.0.0.1")
	require.Equal(t, http.StatusOK, get(a1).StatusCode)
	require.Equal(t, http.StatusOK, get(a2).StatusCode)
	refused(dial("127.0.0.1"), "a client's third connection")
	b1 := dial("127.0.0.2")
	require.Equal(t, http.StatusOK, get(b1).StatusCode, "another client still gets in")
	refused(dial("127.0.0.2"), "the fourth connection in all")
	assert.EqualValues(t, 2, l.Refused())

	require.NoError(t, a1.c.Close())
	require.Eventually(t, func() bool { total, _ := l.Open("127.0.0.1"); return total == 2 }, 10*time.Second, time.Millisecond,
		"the closed connection gives its slot back")
	a3 := dial("127.0.0.1")
	assert.Equal(t, http.StatusOK, get(a3).StatusCode)
}
