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
// NextDeadline is what a scan of every instance finds.
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
				}
			}
			at, ok := d.NextDeadline()
			wantAt, wantOK := d.scanDeadlines()
			require.Equal(t, wantOK, ok, "seed %d op %d", seed, op)
			require.True(t, wantAt.Equal(at), "seed %d op %d: cached %v, scan %v", seed, op, at, wantAt)
		}
	}
}
