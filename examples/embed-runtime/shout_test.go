package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

func input(s string) wire.MessageInput {
	return wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: s}}}}
}

// Input steered into a running Turn is accepted and shouted before the
// Turn ends; after it ended, input is refused as for an inactive Run.
func TestShoutTakesSteeredInput(t *testing.T) {
	a := &shout{}
	require.NoError(t, a.Declaration().Validate())
	exe, err := a.NewExecutor(context.Background(), harness.ExecutorConfig{})
	require.NoError(t, err)
	st, ok := exe.(harness.Steerer)
	require.True(t, ok, "every Turn needs steering")
	var notices []harness.InputNotice
	turn := harness.Turn{RunID: "run-1", Input: input("hello"), Declaration: a.Declaration(),
		Notify: func(n harness.InputNotice) { notices = append(notices, n) }}
	var deltas []string
	done, err := exe.Run(context.Background(), turn, func(ctx context.Context, p wire.Payload) error {
		deltas = append(deltas, p.(wire.Delta).Delta)
		if len(deltas) == 1 { // steered while the first word goes out
			require.NoError(t, st.Steer(ctx, "run-1", "in-1", input("and you")))
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, "HELLO AND YOU", done.Content)
	assert.Equal(t, []string{"HELLO", " AND", " YOU"}, deltas)
	assert.Equal(t, []harness.InputNotice{{InputID: "in-1", Accepted: true}}, notices)
	assert.ErrorIs(t, st.Steer(context.Background(), "run-1", "in-2", input("late")), harness.ErrRunInactive)
	require.NoError(t, exe.Close(context.Background()))
}
