package harness_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

func text(s string) wire.MessageInput {
	return wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentText, Text: s}}}}
}

// notices records what the Inbox reports through the Turn's Notify.
type notices struct {
	mu  sync.Mutex
	got []harness.InputNotice
}

func (n *notices) notify(x harness.InputNotice) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, x)
}

func (n *notices) list() []harness.InputNotice {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]harness.InputNotice(nil), n.got...)
}

func inboxTurn(n *notices) harness.Turn {
	return harness.Turn{RunID: "run-1", Notify: n.notify, Declaration: harness.Declaration{Capabilities: harness.MustSupport("steering")}}
}

// Steer is the write, Take the acceptance; Finish ends the Turn only when
// nothing waits, and input after it is refused.
func TestInboxWritesThenAcceptsWhenTaken(t *testing.T) {
	var b harness.Inbox
	ctx := context.Background()
	require.ErrorIs(t, b.Steer(ctx, "run-1", "in-0", text("early")), harness.ErrRunInactive, "no Turn is open")
	n := &notices{}
	b.Begin(inboxTurn(n))
	require.ErrorIs(t, b.Steer(ctx, "run-2", "in-0", text("other")), harness.ErrRunInactive)
	require.NoError(t, b.Steer(ctx, "run-1", "in-1", text("one")))
	require.NoError(t, b.Steer(ctx, "run-1", "in-2", text("two")))
	assert.Empty(t, n.list(), "written, not accepted yet")
	assert.False(t, b.Finish(), "input waits")
	assert.Equal(t, append(text("one"), text("two")...), b.Take())
	assert.Equal(t, []harness.InputNotice{{InputID: "in-1", Accepted: true}, {InputID: "in-2", Accepted: true}}, n.list())
	assert.Nil(t, b.Take())
	assert.True(t, b.Finish())
	require.ErrorIs(t, b.Steer(ctx, "run-1", "in-3", text("late")), harness.ErrRunInactive)
	b.End()
	assert.Len(t, n.list(), 2, "End after Finish reports nothing")
}

// A Turn that ends early refuses what it did not take.
func TestInboxEndRefusesUntakenInput(t *testing.T) {
	var b harness.Inbox
	n := &notices{}
	b.Begin(inboxTurn(n))
	require.NoError(t, b.Steer(context.Background(), "run-1", "in-1", text("one")))
	b.End()
	assert.Equal(t, []harness.InputNotice{{InputID: "in-1", Code: wire.SteerCodeRunInactive, Error: "the Turn ended before it took the input"}}, n.list())
	require.ErrorIs(t, b.Steer(context.Background(), "run-1", "in-2", text("two")), harness.ErrRunInactive)
}

// The declaration gates the content: an image without message_images.
func TestInboxChecksTheDeclaration(t *testing.T) {
	var b harness.Inbox
	b.Begin(inboxTurn(&notices{}))
	img := wire.MessageInput{{Content: []wire.InputContent{{Type: wire.ContentImage, ImageURL: "data:image/png;base64,AA=="}}}}
	err := b.Steer(context.Background(), "run-1", "in-1", img)
	var unsupported *harness.UnsupportedError
	require.ErrorAs(t, err, &unsupported)
	assert.Equal(t, "message_images", unsupported.Capability)
}

// Input steered while the Turn takes and finishes is never lost: every
// Steer that returned nil was taken and accepted, every other one refused.
func TestInboxLosesNothingAcceptedUnderRace(t *testing.T) {
	var b harness.Inbox
	n := &notices{}
	b.Begin(inboxTurn(n))
	var wg sync.WaitGroup
	var mu sync.Mutex
	written := map[string]bool{}
	for i := range 50 {
		wg.Go(func() {
			id := fmt.Sprintf("in-%d", i)
			if b.Steer(context.Background(), "run-1", id, text(id)) == nil {
				mu.Lock()
				written[id] = true
				mu.Unlock()
			}
		})
	}
	taken := map[string]bool{}
	for {
		for _, m := range b.Take() {
			taken[m.Content[0].Text] = true
		}
		if b.Finish() {
			break
		}
	}
	wg.Wait()
	b.End()
	assert.Equal(t, written, taken)
	accepted := map[string]bool{}
	for _, x := range n.list() {
		require.True(t, x.Accepted, "nothing is refused after Finish")
		accepted[x.InputID] = true
	}
	assert.Equal(t, written, accepted)
}

// An Executor whose Turn reads steered input when it has finished what it
// was given: Finish ends the Turn only once nothing waits.
func ExampleInbox() {
	var b harness.Inbox
	b.Begin(harness.Turn{RunID: "run-1", Declaration: harness.Declaration{Capabilities: harness.MustSupport("steering")},
		Notify: func(n harness.InputNotice) { fmt.Println("accepted", n.InputID, n.Accepted) }})
	defer b.End()
	_ = b.Steer(context.Background(), "run-1", "in-1", text("louder"))
	for !b.Finish() {
		fmt.Println("took", b.Take().Text())
	}
	fmt.Println(b.Steer(context.Background(), "run-1", "in-2", text("late")))
	// Output:
	// accepted in-1 true
	// took louder
	// harness: the Run is not active
}
