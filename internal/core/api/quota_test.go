package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/internal/core/api"
	"github.com/agentwire/agentwire/internal/peer"
)

// newQuotaEnv is newEnv with quotas and a manual clock for the token
// buckets and the usage cache.
func newQuotaEnv(t *testing.T, q api.Quotas) (*env, *peer.ManualClock) {
	st := memory.New()
	clock := peer.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	is := credential.Issuer{Store: st, Now: clock.Now}
	e := &env{t: t, store: st, journal: &api.Journal{Store: st}}
	var err error
	_, e.key, err = is.Issue(context.Background(), store.KindProject, "", "p1")
	require.NoError(t, err)
	_, e.other, err = is.Issue(context.Background(), store.KindProject, "", "p2")
	require.NoError(t, err)
	mux := http.NewServeMux()
	api.New(api.Config{Store: st, Credentials: is, Journal: e.journal, Now: clock.Now, Clock: clock, Quotas: q}).Register(mux)
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e, clock
}

// refused checks a 429 with Retry-After naming the quota and its limit.
func refused(t *testing.T, resp *http.Response, body map[string]any, quota string, limit float64) {
	t.Helper()
	require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "%v", body)
	assert.Equal(t, "quota_exceeded", body["error"])
	assert.Equal(t, quota, body["quota"])
	assert.Equal(t, limit, body["limit"])
	assert.NotEmpty(t, body["detail"])
	n, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After is a number of seconds")
	assert.Positive(t, n)
}

const noneSession = `{"agent_kind":"codex","environment":{"type":"none"}}`

func TestQuotaSessions(t *testing.T) {
	e, clock := newQuotaEnv(t, api.Quotas{Sessions: 3})
	for i := 0; i < 3; i++ {
		resp, body := e.do(e.key, "POST", "/api/v1/sessions", noneSession)
		require.Equal(t, 201, resp.StatusCode, "%v", body)
	}
	resp, body := e.do(e.key, "POST", "/api/v1/sessions", noneSession)
	refused(t, resp, body, api.QuotaSessions, 3)
	resp, _ = e.do(e.other, "POST", "/api/v1/sessions", noneSession)
	assert.Equal(t, 201, resp.StatusCode, "another project has its own quota")
	clock.Advance(time.Hour)
	resp, body = e.do(e.key, "POST", "/api/v1/sessions", noneSession)
	refused(t, resp, body, api.QuotaSessions, 3) // read again from the store: still 3
}

func TestQuotaQueuedTurns(t *testing.T) {
	e, clock := newQuotaEnv(t, api.Quotas{QueuedTurns: 2, UsageTTL: time.Second})
	sid, _ := e.localSession("")
	var turns []string
	for i := 0; i < 2; i++ {
		resp, body := e.do(e.key, "POST", "/api/v1/sessions/"+sid+"/turns", input)
		require.Equal(t, 201, resp.StatusCode, "%v", body)
		turns = append(turns, body["id"].(string))
	}
	resp, body := e.do(e.key, "POST", "/api/v1/sessions/"+sid+"/turns", input)
	refused(t, resp, body, api.QuotaQueuedTurns, 2)

	// A Turn that left the queue makes room at once: a refusal is decided
	// on a fresh read of the usage, never on the count kept since the last
	// one (which only grows), so a client that submits Turns one after
	// another as fast as they run is never refused.
	require.NoError(t, e.store.MoveTurn(context.Background(), store.TurnMove{TurnID: turns[0], From: store.TurnQueued, To: store.TurnCancelled,
		Outcome: &store.Outcome{}, At: clock.Now()}))
	resp, body = e.do(e.key, "POST", "/api/v1/sessions/"+sid+"/turns", input)
	assert.Equal(t, 201, resp.StatusCode, "%v", body)
	resp, body = e.do(e.key, "POST", "/api/v1/sessions/"+sid+"/turns", input)
	refused(t, resp, body, api.QuotaQueuedTurns, 2)
}

func TestQuotaStoreBytes(t *testing.T) {
	e, _ := newQuotaEnv(t, api.Quotas{StoreBytes: 4 << 10})
	big := `{"agent_kind":"codex","environment":{"type":"none"},"options":{"x":"` + strings.Repeat("a", 3<<10) + `"}}`
	resp, body := e.do(e.key, "POST", "/api/v1/sessions", big)
	require.Equal(t, 201, resp.StatusCode, "%v", body)
	sid := body["id"].(string)
	resp, body = e.do(e.key, "POST", "/api/v1/sessions", big)
	refused(t, resp, body, api.QuotaStoreBytes, 4<<10)

	in := `{"input":[{"content":[{"type":"input_text","text":"` + strings.Repeat("b", 1<<10) + `"}]}]}`
	resp, body = e.do(e.key, "POST", "/api/v1/sessions/"+sid+"/turns", in)
	refused(t, resp, body, api.QuotaStoreBytes, 4<<10)
	resp, body = e.do(e.key, "POST", "/api/v1/sessions/"+sid+"/turns", input)
	require.Equal(t, 201, resp.StatusCode, "a small Turn still fits: %v", body)
	tid := body["id"].(string)
	resp, body = e.do(e.key, "POST", "/api/v1/turns/"+tid+"/input", in)
	refused(t, resp, body, api.QuotaStoreBytes, 4<<10)
}

func TestQuotaRequestRate(t *testing.T) {
	e, clock := newQuotaEnv(t, api.Quotas{Rate: 2, Burst: 5})
	for i := 0; i < 5; i++ {
		resp, _ := e.do(e.key, "GET", "/api/v1/engine-profiles", "")
		require.Equal(t, 200, resp.StatusCode, "request %d of the burst", i)
	}
	resp, body := e.do(e.key, "GET", "/api/v1/engine-profiles", "")
	refused(t, resp, body, api.QuotaRequestRate, 2)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"), "one token comes back in half a second")
	resp, _ = e.do(e.other, "GET", "/api/v1/engine-profiles", "")
	assert.Equal(t, 200, resp.StatusCode, "another project has its own bucket")
	clock.Advance(500 * time.Millisecond)
	resp, _ = e.do(e.key, "GET", "/api/v1/engine-profiles", "")
	assert.Equal(t, 200, resp.StatusCode, "a token came back")
	resp, _ = e.do(e.key, "GET", "/api/v1/engine-profiles", "")
	assert.Equal(t, 429, resp.StatusCode)

	// Unauthenticated requests spend their client address's bucket, and
	// once it is empty the address is refused before any key is looked
	// up, a valid one included.
	for i := 0; i < 5; i++ {
		resp, _ := e.do(credential.Secret("bad-"+strconv.Itoa(i)), "GET", "/api/v1/engine-profiles", "")
		require.Equal(t, 401, resp.StatusCode)
	}
	resp, body = e.do("", "GET", "/api/v1/engine-profiles", "")
	refused(t, resp, body, api.QuotaRequestRate, 2)
	resp, _ = e.do(e.other, "GET", "/api/v1/engine-profiles", "")
	assert.Equal(t, 429, resp.StatusCode)
	clock.Advance(time.Minute)
	resp, _ = e.do(e.other, "GET", "/api/v1/engine-profiles", "")
	assert.Equal(t, 200, resp.StatusCode)
}
