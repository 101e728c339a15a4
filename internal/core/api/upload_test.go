package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/core/api"
)

// pipeListener serves in-memory connections (net.Pipe), so a test runs
// the real http.Server inside a synctest bubble, its deadlines on the
// bubble's clock.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

func (l *pipeListener) dial() net.Conn {
	server, client := net.Pipe()
	l.conns <- server
	return client
}

// bubbleAPI serves the API with a Session "ses" of project p1 over a
// pipeListener; Write records nothing and must not be reached.
func bubbleAPI(t *testing.T, cfg api.Config) (*pipeListener, credential.Secret) {
	st := memory.New()
	now := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	is := credential.Issuer{Store: st, Now: now}
	_, key, err := is.Issue(context.Background(), store.KindProject, "", "p1")
	require.NoError(t, err)
	require.NoError(t, st.CreateEnvironment(context.Background(), store.Environment{ID: "env", Project: "p1", Type: "none", CreatedAt: now()}))
	require.NoError(t, st.CreateSession(context.Background(), store.Session{ID: "ses", Project: "p1", AgentKind: "codex", EnvironmentID: "env", CreatedAt: now()}))
	cfg.Store, cfg.Credentials, cfg.Journal, cfg.Now, cfg.Logger = st, is, &api.Journal{Store: st}, now, slog.New(slog.DiscardHandler)
	cfg.Write = func(context.Context, string, string, []byte) (api.WriteRecord, error) {
		t.Error("a body that never arrived whole reached the write")
		return api.WriteRecord{}, nil
	}
	mux := http.NewServeMux()
	api.New(cfg).Register(mux)
	ln := newPipeListener()
	hs := &http.Server{Handler: mux}
	done := make(chan struct{})
	go func() { defer close(done); _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close(); <-done })
	return ln, key
}

// stalledRequest sends the head of a request with its Content-Length and
// all of body but its last byte, then waits for the answer, which it
// hands to the returned channel.
func stalledRequest(t *testing.T, ln *pipeListener, head string, body []byte) (net.Conn, <-chan *http.Response) {
	c := ln.dial()
	t.Cleanup(func() { _ = c.Close() })
	got := make(chan *http.Response, 1)
	go func() {
		if _, err := fmt.Fprintf(c, "%s\r\nContent-Length: %d\r\n\r\n", head, len(body)); err != nil {
			return
		}
		if _, err := c.Write(body[:len(body)-1]); err != nil {
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		got <- resp
	}()
	return c, got
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestStalledUploadIsCutOffAndHoldsNoBuffer: uploads of 5 MiB that stop
// one byte short hold their bodies in files of UploadDir, not in memory;
// at the upload's deadline each is answered 408 upload_timeout and its
// file is gone. Time is the synctest bubble's: the deadline passes at
// once.
func TestStalledUploadIsCutOffAndHoldsNoBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		ln, key := bubbleAPI(t, api.Config{UploadDir: dir, Timeouts: api.Timeouts{Upload: time.Minute}})
		body := make([]byte, api.MaxWriteBody)
		const uploads = 4
		before := heapInUse()
		var answers []<-chan *http.Response
		for i := 0; i < uploads; i++ {
			_, got := stalledRequest(t, ln, "PUT /api/v1/sessions/ses/files/content?path=a.txt HTTP/1.1\r\nHost: core\r\nAuthorization: Bearer "+key.Reveal(), body)
			answers = append(answers, got)
		}
		synctest.Wait() // every upload is read up to its missing byte

		held := int64(heapInUse()) - int64(before)
		t.Logf("heap held by %d stalled 5 MiB uploads: %d KiB", uploads, held/1024)
		assert.Less(t, held, int64(2<<20), "the stalled bodies are not held in memory")
		files, err := os.ReadDir(dir)
		require.NoError(t, err)
		require.Len(t, files, uploads, "each body is streamed to its file")
		for _, f := range files {
			info, err := f.Info()
			require.NoError(t, err)
			assert.EqualValues(t, api.MaxWriteBody-1, info.Size())
		}
		for _, got := range answers {
			select {
			case <-got:
				t.Fatal("answered before the upload's deadline")
			default:
			}
		}

		time.Sleep(time.Minute)
		synctest.Wait()
		for i, got := range answers {
			select {
			case resp := <-got:
				assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "upload %d", i)
				var e api.Error
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
				assert.Equal(t, "upload_timeout", e.Error)
				assert.Equal(t, "body", e.Field)
			default:
				t.Errorf("upload %d was not cut off at its deadline", i)
			}
		}
		files, err = os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, files, "a cut-off upload leaves no file")
	})
}

// TestStalledBodyOfAnOrdinaryRoute: a JSON body that stops arriving is
// cut off at the body deadline of an ordinary route.
func TestStalledBodyOfAnOrdinaryRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln, key := bubbleAPI(t, api.Config{Timeouts: api.Timeouts{Body: 30 * time.Second}})
		body := []byte(`{"agent_kind":"codex","environment":{"type":"none"}}`) // the last } never comes
		_, got := stalledRequest(t, ln, "POST /api/v1/sessions HTTP/1.1\r\nHost: core\r\nAuthorization: Bearer "+key.Reveal(), body)
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("answered before the body's deadline")
		default:
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		select {
		case resp := <-got:
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
		default:
			t.Fatal("the stalled body was not cut off at its deadline")
		}
	})
}
