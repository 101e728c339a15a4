package execution_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/peer"
	"github.com/agentwire/agentwire/internal/runtime/execution"
	"github.com/agentwire/agentwire/runtime/harness"
)

func key(b byte) [32]byte { return [32]byte{b} }

func exe(a *counting) harness.Executor {
	e, _ := a.NewExecutor(context.Background(), harness.ExecutorConfig{})
	return e
}

// TestPoolIdleExpiryOnTheClock: an idle Executor is handed out until its
// expiry and never at or after it, whether or not Maintain closed it yet;
// Maintain closes it when the clock passes the expiry.
func TestPoolIdleExpiryOnTheClock(t *testing.T) {
	clock := peer.NewManualClock(time.Unix(1_800_000_000, 0))
	a := newCounting()
	p := execution.NewPool(execution.PoolConfig{Clock: clock, Logger: quiet, IdleTTL: time.Hour})
	e := exe(a)
	require.True(t, p.Put(key(1), "executor-1", "", e, a.Declaration()))
	_, ok := p.Take(key(2))
	assert.False(t, ok, "another configuration")
	clock.Advance(time.Hour - time.Nanosecond)
	got, ok := p.Take(key(1))
	require.True(t, ok)
	assert.Equal(t, "executor-1", got.ID)
	require.True(t, p.Put(key(1), "executor-1", "", e, a.Declaration()), "back to idle; its expiry restarts")
	clock.Advance(time.Hour)
	_, ok = p.Take(key(1))
	assert.False(t, ok, "an expired Executor is never handed out")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Maintain(ctx)
	}()
	assert.Equal(t, "executor 1 closed ok=true", <-a.closed)
	cancel()
	<-done
	assert.Zero(t, p.IdleCount())
}

// TestPoolIdleBound: the idle set is bounded separately from the active
// one; a full set refuses the newcomer (the caller closes it).
func TestPoolIdleBound(t *testing.T) {
	a := newCounting()
	p := execution.NewPool(execution.PoolConfig{Logger: quiet, MaxIdle: 2})
	assert.True(t, p.Put(key(1), "e1", "", exe(a), a.Declaration()))
	assert.True(t, p.Put(key(2), "e2", "", exe(a), a.Declaration()))
	assert.False(t, p.Put(key(3), "e3", "", exe(a), a.Declaration()))
	assert.Equal(t, 2, p.IdleCount())
	assert.Zero(t, p.Held(), "idle Executors hold no active capacity")
}

// TestPoolShutdownRetriesUntilClosed: shutdown closes idle Executors and
// retries failed closes with backoff on the clock until they succeed;
// nothing is retained after it began.
func TestPoolShutdownRetriesUntilClosed(t *testing.T) {
	clock := peer.NewManualClock(time.Unix(1_800_000_000, 0))
	a := newCounting()
	a.closeFailures = 2
	p := execution.NewPool(execution.PoolConfig{Clock: clock, Logger: quiet})
	require.True(t, p.Put(key(1), "e1", "", exe(a), a.Declaration()))
	failures := make(chan error, 8)
	result := make(chan error, 1)
	go func() { result <- p.Shutdown(nil, func(err error) { failures <- err }) }()
	<-failures
	assert.False(t, p.Put(key(2), "e2", "", exe(a), a.Declaration()), "no Executor is retained once shutdown began")
	assert.Contains(t, p.Waiting(), "e1 (1 failed closes")
	var err error
	require.Eventually(t, func() bool {
		clock.Advance(execution.DefaultRetryMax)
		select {
		case err = <-result:
			return true
		default:
			return false
		}
	}, 10*time.Second, time.Millisecond)
	assert.NoError(t, err)
	assert.Len(t, failures, 1, "the second failure; the third close succeeded")
}

// TestPoolShutdownAbandon: only the abandon channel ends a shutdown whose
// closes keep failing, and it reports ErrAbandoned.
func TestPoolShutdownAbandon(t *testing.T) {
	clock := peer.NewManualClock(time.Unix(1_800_000_000, 0))
	a := newCounting()
	a.closeFailures = 1 << 30
	p := execution.NewPool(execution.PoolConfig{Clock: clock, Logger: quiet})
	p.Retain("e1", "", exe(a), errClose)
	abandon := make(chan struct{})
	result := make(chan error, 1)
	go func() { result <- p.Shutdown(abandon, nil) }()
	tries := 0
	require.Eventually(t, func() bool {
		clock.Advance(execution.DefaultRetryMax)
		for {
			select {
			case err := <-result:
				t.Fatalf("shutdown returned %v before the operator abandoned", err)
			case <-a.closed:
				tries++
				continue
			default:
			}
			return tries >= 3
		}
	}, 10*time.Second, time.Millisecond, "it keeps retrying")
	close(abandon)
	assert.ErrorIs(t, <-result, execution.ErrAbandoned)
}
