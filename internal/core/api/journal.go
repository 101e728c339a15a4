package api

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/internal/peer"
)

// Journal appends to the store's event journal and wakes the SSE streams
// of the Turn.
type Journal struct {
	Store store.Store
	// Budget bounds the event bytes subscriptions hold until their
	// subscribers wrote them (ByteBudget's defaults when nil).
	Budget *ByteBudget
	// Poll, when positive, bounds how long a stream waits for a Notify
	// before it reads the journal again: with several replicas, events
	// and status changes are written by other processes too.
	Poll time.Duration
	mu   sync.Mutex
	wake map[string]chan struct{}
	// failed holds the Turns whose failure is not written yet
	// (unrecorded.go).
	failed map[string]unrecorded
}

// Append stores events in one atomic write and wakes the subscribers of
// each Turn that got one.
func (j *Journal) Append(ctx context.Context, events ...store.Event) ([]store.Event, error) {
	res, err := j.Store.Commit(ctx, store.Batch{Events: events})
	out := res.Events
	for i, e := range out {
		if e.Seq != 0 && (i == 0 || out[i-1].TurnID != e.TurnID) {
			j.Notify(e.TurnID)
		}
	}
	return out, err
}

// Notify wakes the Turn's subscribers (after an event or a status change).
func (j *Journal) Notify(turnID string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if ch, ok := j.wake[turnID]; ok {
		close(ch)
		delete(j.wake, turnID)
	}
}

// budget is the Journal's ByteBudget, created with the defaults when the
// Journal was given none.
func (j *Journal) budget() *ByteBudget {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.Budget == nil {
		j.Budget = &ByteBudget{}
	}
	return j.Budget
}

// changed returns a channel closed at the Turn's next Notify.
func (j *Journal) changed(turnID string) <-chan struct{} {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.wake == nil {
		j.wake = map[string]chan struct{}{}
	}
	ch, ok := j.wake[turnID]
	if !ok {
		ch = make(chan struct{})
		j.wake[turnID] = ch
	}
	return ch
}

// Subscription follows one Turn's durable journal: the one way to follow a
// Run's events in Core (daemon-protocol.txt:151). Events arrive in journal
// order on Events; when that channel closes, Err says why, and nothing is
// invented on the way out (no error, no done, no status the journal does
// not hold):
//
// Once the journal as it stood was delivered and the Turn still runs, one
// LiveEvent marker follows (see LiveEvent).
//   - nil: the Turn is terminal and every event of it was delivered; Final
//     is its status. A Run whose connection was lost or whose Core
//     subscription overflowed ends this way too, its Turn failed
//     event_stream_incomplete with the observation that says which.
//   - *OverflowError: the subscriber took no event for the stall bound;
//     it resumes from the journal after OverflowError.After.
//   - the context's error: the subscriber went away.
type Subscription struct {
	events chan store.Event
	done   chan struct{}
	err    error
	final  store.Turn
	// budget, key and held: the bytes of events reserved for this
	// subscriber and not yet given back by Written or Release.
	budget *ByteBudget
	key    string
	held   atomic.Int64
}

// Written says the subscriber has written e out: its bytes go back to the
// budget. Call it once per event taken from Events.
func (s *Subscription) Written(e store.Event) {
	n := min(int64(len(e.Payload)), s.held.Load())
	s.held.Add(-n)
	s.budget.giveBack(s.key, n)
}

// Release gives back whatever the subscription still holds; call it once
// Events closed (the subscriber drained it).
func (s *Subscription) Release() {
	s.budget.giveBack(s.key, s.held.Swap(0))
}

// Events delivers the Turn's events in order; it closes at the end.
func (s *Subscription) Events() <-chan store.Event { return s.events }

// Done is closed once the subscription ended, whether or not the
// subscriber took every event offered; Err is set by then.
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err says why Events closed; call it only after Events or Done closed.
func (s *Subscription) Err() error { return s.err }

// Final is the Turn as it ended, once Events closed with Err nil.
func (s *Subscription) Final() store.Turn { return s.final }

// OverflowError ends a subscription whose subscriber fell behind.
type OverflowError struct {
	// After is the sequence number of the last event delivered: a new
	// subscription from After misses nothing.
	After int64
	Stall time.Duration
}

func (e *OverflowError) Error() string {
	return fmt.Sprintf("api: subscriber took no event for %s; resume after event %d", e.Stall, e.After)
}

// Subscribe options.
const (
	// subscriptionPage is how many events a subscription reads at a time,
	// and subscriptionPageBytes how many payload bytes (one event larger
	// than that is read alone): with the budget, what a subscriber that
	// stopped reading can hold in memory.
	subscriptionPage      = 16
	subscriptionPageBytes = 256 << 10
	// DefaultStall is how long a subscriber may take no event before its
	// subscription ends with an OverflowError.
	DefaultStall = 30 * time.Second
)

// SubscribeDurable follows turnID's journal from after the sequence number
// after until the Turn is terminal and drained, ctx ends, or the
// subscriber takes no event for stall (DefaultStall when 0, on clock).
// key is whose budget the events count against (the project); the
// subscriber calls Written after writing each event and Release at the
// end.
//
// decision: a subscriber that stops reading holds one page of events and
// its goroutine for the stall bound, then gets an explicit overflow end;
// nothing is buffered for it beyond that, since the journal is durable and
// it resumes from its last event (daemon-protocol.txt:151: overflow closes
// the subscription with an explicit error and fabricates nothing).
func (j *Journal) SubscribeDurable(ctx context.Context, key, turnID string, after int64, clock peer.Clock, stall time.Duration) *Subscription {
	if stall <= 0 {
		stall = DefaultStall
	}
	if clock == nil {
		clock = peer.SystemClock()
	}
	s := &Subscription{events: make(chan store.Event), done: make(chan struct{}), budget: j.budget(), key: key}
	go func() {
		defer close(s.done)
		defer close(s.events)
		s.err = j.follow(ctx, s, turnID, after, clock, stall)
	}()
	return s
}

// LiveEvent is the type of the one marker a subscription delivers once it
// has delivered the journal as it stood (the history) and the Turn is
// still running: every event after it is new. Its Seq is the last event
// before it. It is no journal event and has no ID in the event stream; a
// follower that asks the user about open questions waits for it, so that
// it never asks about one the history already settled.
const LiveEvent = "live"

func (j *Journal) follow(ctx context.Context, s *Subscription, turnID string, after int64, clock peer.Clock, stall time.Duration) error {
	timer := clock.NewTimer(stall)
	defer timer.Stop()
	deliver := func(e store.Event) error {
		timer.Reset(stall)
		select {
		case s.events <- e:
			return nil
		case <-timer.C():
			return &OverflowError{After: after, Stall: stall}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	live := false
	for {
		// Subscribe before reading, so a Notify between the read and the
		// wait is not lost.
		changed := j.changed(turnID)
		sizes, err := j.Store.EventSizes(ctx, turnID, after, subscriptionPage)
		if err != nil {
			return err
		}
		if len(sizes) > 0 {
			// Reserve the page's bytes before reading it: the first event
			// waits for its bytes (counted against the stall bound, like a
			// subscriber that does not take the next event), the others
			// join the page only while they fit now.
			timer.Reset(stall)
			if err := s.budget.reserve(ctx, s.key, int64(sizes[0].Bytes), timer.C()); err != nil {
				if errors.Is(err, errStalled) {
					return &OverflowError{After: after, Stall: stall}
				}
				return err
			}
			n, bytes := 1, int64(sizes[0].Bytes)
			for _, sz := range sizes[1:] {
				if bytes+int64(sz.Bytes) > subscriptionPageBytes || !s.budget.tryReserve(s.key, int64(sz.Bytes)) {
					break
				}
				n++
				bytes += int64(sz.Bytes)
			}
			s.held.Add(bytes)
			evs, err := j.Store.Events(ctx, turnID, after, n)
			if err != nil {
				return err
			}
			for _, e := range evs {
				if err := deliver(e); err != nil {
					return err
				}
				after = e.Seq
			}
			continue // read on until a page comes back empty
		}
		cur, err := j.Turn(ctx, turnID)
		if err != nil {
			return err
		}
		if cur.State.Terminal() {
			// The Turn's record commits with or after its last events;
			// read once more so none written just before it is missed.
			more, err := j.Store.Events(ctx, turnID, after, 1)
			if err != nil {
				return err
			}
			if len(more) == 0 {
				s.final = cur
				return nil
			}
			continue
		}
		if !live {
			live = true
			if err := deliver(store.Event{TurnID: turnID, Type: LiveEvent, Seq: after}); err != nil {
				return err
			}
		}
		if err := j.await(ctx, changed, clock); err != nil {
			return err
		}
	}
}

// ReplicaPoll is Journal.Poll for a Core that shares its store.
//
// decision: a reader on one replica learns of events another replica
// wrote by reading the journal again at most this long after; polling
// works on every store and needs no connection held open per replica
// (PostgreSQL's LISTEN would), and one indexed read per open stream every
// quarter second is cheap next to the stream itself. An event written on
// the reader's own replica still wakes it at once.
const ReplicaPoll = 250 * time.Millisecond

// await waits for the Turn's next Notify, or Poll.
func (j *Journal) await(ctx context.Context, changed <-chan struct{}, clock peer.Clock) error {
	var poll <-chan time.Time
	if j.Poll > 0 {
		t := clock.NewTimer(j.Poll)
		defer t.Stop()
		poll = t.C()
	}
	select {
	case <-changed:
	case <-poll:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// IsOverflow reports whether err ended a subscription whose subscriber
// fell behind.
func IsOverflow(err error) bool {
	var o *OverflowError
	return errors.As(err, &o)
}
