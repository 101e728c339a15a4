package peer

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/fsm"
	"github.com/agentwire/agentwire/fsm/preparation"
	"github.com/agentwire/agentwire/fsm/run"
)

// coinApp holds each guard with probability one half, so that random
// events walk the tables' guarded branches too; it performs nothing.
type coinApp struct{ r *rand.Rand }

func (a coinApp) Binding(string) fsm.Binding[*Event]             { return a }
func (a coinApp) Refused(*Refusal)                               {}
func (a coinApp) Guard(fsm.GuardID, *fsm.Firing[*Event]) bool    { return a.r.IntN(2) == 0 }
func (a coinApp) Perform(*fsm.Effect, *fsm.Firing[*Event]) error { return nil }

// TestNextDeadlineCacheMatchesScan: after every random operation (open an
// instance, which may evict a settled one; fire any event of the real
// preparation and run tables; move the clock and tick) the cached
// NextDeadline is what a scan of every instance finds, and so is the
// scan of the timed instances and settled queues; each machine's
// settled queue holds exactly its settled instances, oldest first (so
// eviction takes the one that settled first).
func TestNextDeadlineCacheMatchesScan(t *testing.T) {
	for seed := range uint64(60) {
		r := rand.New(rand.NewPCG(seed, 7))
		clock := NewManualClock(time.Unix(1_800_000_000, 0))
		tables := []*fsm.Table{preparation.Table, run.Table}
		d, err := New(Config{Role: fsm.RoleRuntime, Tables: tables, Router: MustCatalogRouter(tables), App: coinApp{r}, Clock: clock, Logger: slog.New(slog.DiscardHandler),
			Limits: Limits{MaxInstances: 6, Retention: 3 * time.Minute, MaxPendingSends: 8}})
		require.NoError(t, err)
		var keys []Key
		for op := range 400 {
			switch n := r.IntN(10); {
			case n < 2:
				tb := tables[r.IntN(len(tables))]
				k := Key{Machine: tb.Name, ID: fmt.Sprint(op)}
				if _, err := d.Open(k); err == nil {
					keys = append(keys, k)
				}
			case n < 8 && len(keys) > 0:
				k := keys[r.IntN(len(keys))]
				if i, ok := d.Lookup(k); ok {
					_ = d.Local(k, fsm.EventID(1+r.IntN(len(i.Table().Events))), nil)
				}
			default:
				clock.Advance(time.Duration(r.IntN(200)) * time.Second)
				if at, ok := d.NextDeadline(); ok && !at.After(clock.Now()) {
					d.Tick()
					at, ok := scanEveryInstance(d)
					require.False(t, ok && !at.After(clock.Now()), "seed %d op %d: Tick left a deadline due", seed, op)
				}
			}
			checkSettledQueues(t, d)
			at, ok := d.NextDeadline()
			wantAt, wantOK := scanEveryInstance(d)
			require.Equal(t, wantOK, ok, "seed %d op %d", seed, op)
			require.True(t, wantAt.Equal(at), "seed %d op %d: cached %v, scan %v", seed, op, at, wantAt)
			at, ok = d.scanDeadlines()
			require.Equal(t, wantOK, ok, "seed %d op %d", seed, op)
			require.True(t, wantAt.Equal(at), "seed %d op %d: indexed scan %v, every instance %v", seed, op, at, wantAt)
		}
	}
}

func checkSettledQueues(t *testing.T, d *Driver) {
	t.Helper()
	want := map[string]int{}
	for _, i := range d.instances {
		if i.Terminal() {
			want[i.Key.Machine]++
		}
	}
	for machine, q := range d.settled {
		n := 0
		var last time.Time
		for _, i := range q {
			if !d.live(i) {
				continue
			}
			require.True(t, i.Terminal(), "%s in the settled queue is live", i.Key)
			require.False(t, i.settled.Before(last), "%s settled out of order", i.Key)
			last = i.settled
			n++
		}
		require.Equal(t, want[machine], n, "settled instances of %s", machine)
		delete(want, machine)
	}
	for machine, n := range want {
		require.Zero(t, n, "settled instances of %s missing from the queue", machine)
	}
}

// scanEveryInstance is the earliest deadline by definition.
func scanEveryInstance(d *Driver) (at time.Time, ok bool) {
	consider := func(t time.Time) {
		if !ok || t.Before(at) {
			at, ok = t, true
		}
	}
	for _, i := range d.instances {
		for _, dl := range i.deadlines {
			if dl.armed {
				consider(dl.at)
			}
		}
		if !i.settled.IsZero() {
			consider(i.settled.Add(d.cfg.Limits.Retention))
		}
	}
	return at, ok
}

// A Conn arms its timer for the driver's next deadline. With a manual clock
// a test may Advance between the loop's Now and its Reset; a duration
// computed from that Now would then fire late by the advance (a 30 s wait
// that never fires at 30 s). ResetAt fixes the point of time instead.
func TestManualTimerResetAtIgnoresAdvanceInBetween(t *testing.T) {
	clock := NewManualClock(time.Unix(1000, 0))
	timer := clock.NewTimer(time.Hour)
	now := clock.Now()
	deadline := now.Add(time.Second)
	clock.Advance(500 * time.Millisecond) // the test moves on between Now and the reset
	dt, ok := timer.(deadlineTimer)
	require.True(t, ok, "ManualClock's timer takes a deadline")
	dt.ResetAt(deadline)
	clock.Advance(500 * time.Millisecond)
	select {
	case at := <-timer.C():
		require.Equal(t, deadline, at)
	default:
		t.Fatal("the timer did not fire at its deadline")
	}

	// A deadline already passed fires at once.
	dt.ResetAt(now)
	select {
	case <-timer.C():
	default:
		t.Fatal("a passed deadline did not fire")
	}
}
