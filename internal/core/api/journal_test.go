package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/credential"
	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/core/store/storetest"
	"github.com/agentwire/agentwire/internal/core/api"
	"github.com/agentwire/agentwire/internal/peer"
)

var subT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// runningTurn stores a running Turn with n deltas in its journal.
func runningTurn(t *testing.T, st store.Store, j *api.Journal, n int) string {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, st.CreateEnvironment(ctx, store.Environment{ID: "env", Project: "p1", Type: "none", CreatedAt: subT0}))
	require.NoError(t, st.CreateSession(ctx, store.Session{ID: "ses", Project: "p1", AgentKind: "codex", EnvironmentID: "env", CreatedAt: subT0}))
	require.NoError(t, st.CreateTurn(ctx, store.Turn{ID: "turn", SessionID: "ses", Input: json.RawMessage(`[]`), CreatedAt: subT0}))
	require.NoError(t, storetest.Start(st, "turn", store.Claim{DeviceID: "dev", OwnerEpoch: 1, RunID: "run", At: subT0}))
	for i := range n {
		_, err := j.Append(ctx, store.Event{TurnID: "turn", RunID: "run", Type: "delta", Payload: json.RawMessage(`{"delta":"` + string(rune('a'+i)) + `"}`), At: subT0})
		require.NoError(t, err)
	}
	return "turn"
}

func finishTurn(t *testing.T, st store.Store, j *api.Journal, id string, to store.TurnState, o store.Outcome) {
	t.Helper()
	require.NoError(t, st.MoveTurn(context.Background(), storetest.FinishMove(id, "run", store.TurnRunning, to, o, subT0)))
	j.Notify(id)
}

// A subscription delivers the journal in order, waits for what is
// appended, and closes with Err nil and the Turn's final record once the
// Turn is terminal and drained; nothing is invented.
func TestSubscriptionFollowsTheJournalToTheEnd(t *testing.T) {
	st := memory.New()
	j := &api.Journal{Store: st}
	id := runningTurn(t, st, j, 2)
	sub := j.SubscribeDurable(t.Context(), "p", id, 1, peer.NewManualClock(subT0), time.Minute)
	got := <-sub.Events()
	assert.Equal(t, int64(2), got.Seq, "from after the given sequence number")
	live := <-sub.Events()
	assert.Equal(t, api.LiveEvent, live.Type, "the history was delivered")
	assert.Equal(t, int64(2), live.Seq)

	_, err := j.Append(context.Background(), store.Event{TurnID: id, RunID: "run", Type: "delta", Payload: json.RawMessage(`{"delta":"z"}`), At: subT0})
	require.NoError(t, err)
	got = <-sub.Events()
	assert.JSONEq(t, `{"delta":"z"}`, string(got.Payload), "a live append reaches it")

	finishTurn(t, st, j, id, store.TurnFailed, store.Outcome{Reason: store.ReasonEventStreamIncomplete})
	_, open := <-sub.Events()
	require.False(t, open)
	require.NoError(t, sub.Err())
	assert.Equal(t, store.TurnFailed, sub.Final().State)
	assert.Equal(t, store.ReasonEventStreamIncomplete, sub.Final().Outcome.Reason, "the journal's reason, no invented done")
}

// A subscriber that takes no event for the stall bound gets an explicit
// overflow end naming the last event it got; a new subscription from
// there misses nothing.
func TestSubscriptionOverflowsWhenTheSubscriberStalls(t *testing.T) {
	st := memory.New()
	j := &api.Journal{Store: st}
	id := runningTurn(t, st, j, 5)
	clock := peer.NewManualClock(subT0)
	sub := j.SubscribeDurable(t.Context(), "p", id, 0, clock, 30*time.Second)
	first := <-sub.Events()
	assert.Equal(t, int64(1), first.Seq)
	// The subscriber stops reading; the bound passes on the clock.
	require.Eventually(t, func() bool { clock.Advance(10 * time.Second); return isClosed(sub) }, 10*time.Second, time.Millisecond)
	var over *api.OverflowError
	require.ErrorAs(t, sub.Err(), &over)
	assert.Equal(t, int64(1), over.After, "the last event it took")
	assert.True(t, api.IsOverflow(sub.Err()))

	again := j.SubscribeDurable(t.Context(), "p", id, over.After, clock, 30*time.Second)
	next := <-again.Events()
	assert.Equal(t, int64(2), next.Seq, "resumed without a gap")
	finishTurn(t, st, j, id, store.TurnCompleted, store.Outcome{})
	for range again.Events() {
	}
	assert.NoError(t, again.Err())
}

// isClosed reports whether sub ended, without taking an event.
func isClosed(sub *api.Subscription) bool {
	select {
	case <-sub.Done():
		return true
	default:
		return false
	}
}

func TestSubscriptionEndsWithItsContext(t *testing.T) {
	st := memory.New()
	j := &api.Journal{Store: st}
	id := runningTurn(t, st, j, 0)
	ctx, cancel := context.WithCancel(t.Context())
	sub := j.SubscribeDurable(ctx, "p", id, 0, nil, 0)
	cancel()
	for range sub.Events() {
	}
	assert.ErrorIs(t, sub.Err(), context.Canceled)
}

// gatedWriter is a ResponseWriter whose writes block while held: a client
// that stopped reading.
type gatedWriter struct {
	header http.Header
	held   chan struct{} // closed to let writes through
	out    strings.Builder
	wrote  chan struct{} // signalled at each write
}

func (g *gatedWriter) Header() http.Header { return g.header }
func (g *gatedWriter) WriteHeader(int)     {}
func (g *gatedWriter) Write(b []byte) (int, error) {
	select {
	case g.wrote <- struct{}{}:
	default:
	}
	<-g.held
	return g.out.Write(b)
}

// The public stream of a client that stops reading ends with an explicit
// "end" event naming where to resume, once the stall bound passed; it
// does not keep the stream (or more than a page) for ever.
func TestEventStreamEndsASlowClientWithOverflow(t *testing.T) {
	st := memory.New()
	j := &api.Journal{Store: st}
	id := runningTurn(t, st, j, 40)
	is := credential.Issuer{Store: st, Now: func() time.Time { return subT0 }}
	_, key, err := is.Issue(context.Background(), store.KindProject, "", "p1")
	require.NoError(t, err)
	clock := peer.NewManualClock(subT0)
	mux := http.NewServeMux()
	api.New(api.Config{Store: st, Credentials: is, Journal: j, Now: clock.Now, Clock: clock, Stall: 30 * time.Second, Revalidate: time.Hour}).Register(mux)

	w := &gatedWriter{header: http.Header{}, held: make(chan struct{}), wrote: make(chan struct{}, 1)}
	req := httptest.NewRequest("GET", "/api/v1/turns/"+id+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+key.Reveal())
	done := make(chan struct{})
	go func() { defer close(done); mux.ServeHTTP(w, req) }()
	<-w.wrote // the handler is blocked writing: the client reads nothing
	require.Eventually(t, func() bool {
		clock.Advance(10 * time.Second)
		select {
		case <-done:
			return true
		default:
		}
		// Once the subscription gave up, let the writes through: the
		// handler writes what it held and then the end.
		if clock.Now().Sub(subT0) > time.Minute {
			select {
			case <-w.held:
			default:
				close(w.held)
			}
		}
		return false
	}, 10*time.Second, time.Millisecond)

	_, types, data := sse(t, &http.Response{Body: io.NopCloser(strings.NewReader(w.out.String()))})
	require.NotEmpty(t, types)
	assert.Equal(t, "end", types[len(types)-1])
	var end struct {
		Reason      string `json:"reason"`
		ResumeAfter int64  `json:"resume_after"`
	}
	require.NoError(t, json.Unmarshal([]byte(data[len(data)-1]), &end))
	assert.Equal(t, "subscriber_overflow", end.Reason)
	assert.Less(t, end.ResumeAfter, int64(40), "the client did not get every event")
	assert.Equal(t, int(end.ResumeAfter), len(types)-1, "every event up to resume_after was written, none after")
}

// Subscriptions share a byte budget: events are reserved before they are
// read and given back once written, so subscribers that never write pin
// at most their project's share, and another project's stream is not
// held up by them (issue 23: 20 clients that never read held 450 MiB).
func TestSubscriptionsShareAByteBudget(t *testing.T) {
	st := memory.New()
	budget := &api.ByteBudget{Total: 10_000, PerKey: 2_500}
	j := &api.Journal{Store: st, Budget: budget}
	id := runningTurn(t, st, j, 0)
	big := json.RawMessage(`{"delta":"` + strings.Repeat("x", 988) + `"}`) // 1,000 bytes
	for range 4 {
		_, err := j.Append(context.Background(), store.Event{TurnID: id, RunID: "run", Type: "delta", Payload: big, At: subT0})
		require.NoError(t, err)
	}
	clock := peer.NewManualClock(subT0)

	// A takes an event and never writes it: its page holds two events.
	a := j.SubscribeDurable(t.Context(), "p", id, 0, clock, 30*time.Second)
	first := <-a.Events()
	assert.Equal(t, int64(1), first.Seq)
	total, p := budget.Held("p")
	assert.Equal(t, int64(2_000), p, "a page joins events only while they fit the project's share")
	assert.Equal(t, int64(2_000), total)

	// B of the same project cannot get its first event's bytes: it gets
	// nothing, and its stall bound ends it with an overflow at 0.
	b := j.SubscribeDurable(t.Context(), "p", id, 0, clock, 30*time.Second)
	// C of another project reads at once.
	c := j.SubscribeDurable(t.Context(), "q", id, 0, clock, 30*time.Second)
	got := <-c.Events()
	assert.Equal(t, int64(1), got.Seq)
	c.Written(got)
	require.Eventually(t, func() bool { clock.Advance(10 * time.Second); return isClosed(b) }, 10*time.Second, time.Millisecond)
	for range b.Events() {
	}
	var over *api.OverflowError
	require.ErrorAs(t, b.Err(), &over)
	assert.Equal(t, int64(0), over.After, "B never got its bytes")

	// A writes its event: its bytes go back, and Release returns the rest.
	a.Written(first)
	_, p = budget.Held("p")
	assert.Equal(t, int64(1_000), p)
	finishTurn(t, st, j, id, store.TurnCompleted, store.Outcome{})
	for e := range a.Events() {
		a.Written(e)
	}
	a.Release()
	b.Release()
	_, p = budget.Held("p")
	assert.Zero(t, p, "nothing is held once the subscriptions ended")
	for e := range c.Events() {
		c.Written(e)
	}
	c.Release()
	total, _ = budget.Held("q")
	assert.Zero(t, total)
}

// TestSubscriptionPollsForAnotherReplicasEvents: with several replicas,
// an event another process appended (its Journal's Notify never reaches
// this one) is delivered once the poll interval passes.
func TestSubscriptionPollsForAnotherReplicasEvents(t *testing.T) {
	st := memory.New()
	reader := &api.Journal{Store: st, Poll: time.Second}
	writer := &api.Journal{Store: st}
	id := runningTurn(t, st, writer, 1)
	clock := peer.NewManualClock(subT0)
	sub := reader.SubscribeDurable(t.Context(), "p", id, 0, clock, time.Hour)
	assert.Equal(t, int64(1), (<-sub.Events()).Seq)
	assert.Equal(t, api.LiveEvent, (<-sub.Events()).Type)

	_, err := writer.Append(context.Background(), store.Event{TurnID: id, RunID: "run", Type: "delta", Payload: json.RawMessage(`{"delta":"b"}`), At: subT0})
	require.NoError(t, err)
	var got store.Event
	// The reader's wait is a timer of the manual clock: advance it until
	// the reader, once waiting, polls.
	require.Eventually(t, func() bool {
		clock.Advance(time.Second)
		select {
		case got = <-sub.Events():
			return true
		default:
			return false
		}
	}, 10*time.Second, time.Millisecond)
	assert.Equal(t, int64(2), got.Seq)
	sub.Written(got)
}
