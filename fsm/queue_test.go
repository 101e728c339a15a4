package fsm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQueueIsBoundedFIFO(t *testing.T) {
	var q Queue[int, string]
	for round := 0; round < 3; round++ { // wraps around the ring
		for i := 0; i < QueueCapacity; i++ {
			require.True(t, q.Push(i, "arg"))
		}
		require.False(t, q.Push(99, "overflow"), "a full queue refuses")
		require.Equal(t, QueueCapacity, q.Len())
		for i := 0; i < QueueCapacity/2; i++ {
			e, a, ok := q.Pop()
			require.True(t, ok)
			require.Equal(t, i, e)
			require.Equal(t, "arg", a)
		}
		q.Clear()
		require.Zero(t, q.Len())
		_, _, ok := q.Pop()
		require.False(t, ok)
	}
	for _, it := range q.items {
		require.Zero(t, it.arg, "cleared slots hold no argument")
	}
}
