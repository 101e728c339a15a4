package chaos

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// echoServer answers every byte it reads with the same byte.
func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return ln.Addr().String()
}

func TestProxyPassesBytesWhenNotCutting(t *testing.T) {
	p, err := NewProxy(echoServer(t), 1, 0) // no cut allowed
	require.NoError(t, err)
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	msg := make([]byte, 200<<10)
	for i := range msg {
		msg[i] = byte(i)
	}
	go func() { _, _ = c.Write(msg) }()
	got := make([]byte, len(msg))
	_, err = io.ReadFull(c, got)
	require.NoError(t, err)
	assert.Equal(t, msg, got)
	assert.Zero(t, p.Cuts.Load())
}

// A connection whose fate is a byte budget is reset after exactly that
// many bytes in its direction, and counted; over the bound it is spared.
func TestProxyCutsAfterTheByteBudget(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxCuts  int
		wantCut  bool
		wantCuts int64
	}{{"within the bound", 1, true, 1}, {"over the bound", 0, false, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewProxy(echoServer(t), 1, tc.maxCuts)
			require.NoError(t, err)
			defer p.Close()
			// Serve one connection by hand with a fixed fate: 10 bytes
			// from the Runtime's side.
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			defer ln.Close()
			accepted := make(chan net.Conn, 1)
			go func() {
				c, err := ln.Accept()
				if err == nil {
					accepted <- c
				}
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			require.NoError(t, err)
			defer c.Close()
			p.wg.Add(1)
			served := make(chan struct{})
			go func() { p.serve(<-accepted, fate{budget: 10, dir: 0}); close(served) }()
			_, err = c.Write([]byte("0123456789abcdef"))
			require.NoError(t, err)
			got, err := io.ReadAll(io.LimitReader(c, 16))
			if tc.wantCut {
				// Reset right after the tenth byte left: the echo of the
				// first ten may or may not be back first, nothing after.
				assert.Contains(t, "0123456789", string(got))
				<-served
			} else {
				require.NoError(t, err)
				assert.Equal(t, "0123456789abcdef", string(got))
				_ = c.Close()
				<-served
			}
			assert.Equal(t, tc.wantCuts, p.Cuts.Load())
		})
	}
}

// A transcript whose last line SIGKILL cut short loses that line only; a
// bad line elsewhere is an error, not silently skipped.
func TestReadTranscript(t *testing.T) {
	dir := t.TempDir()
	good := `{"at":"2026-01-01T00:00:00Z","device":"dev-1","dir":"out","frame":{"type":"execution_start","id":"p1","payload":{"run_id":"r1"}}}` + "\n"
	path := filepath.Join(dir, "frames-1.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(good+good+`{"at":"2026-01-01T00:0`), 0o600))
	frames, err := readTranscript(path, 1)
	require.NoError(t, err)
	require.Len(t, frames, 2)
	assert.Equal(t, Frame{Gen: 1, Device: "dev-1", Dir: "out", Type: "execution_start", ID: "p1", Payload: []byte(`{"run_id":"r1"}`)}, frames[0])

	require.NoError(t, os.WriteFile(path, []byte(good+"{not json\n"+good), 0o600))
	_, err = readTranscript(path, 1)
	assert.ErrorContains(t, err, "line 2")
}
