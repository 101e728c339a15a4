package suspend

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentwire/agentwire/internal/peer"
)

func TestFenceHoldsOneAttemptPerEnvironment(t *testing.T) {
	f := NewFence()
	assert.False(t, f.Held("env"))
	assert.True(t, f.hold("env", "s-1"))
	assert.True(t, f.hold("env", "s-1"), "the same attempt again")
	assert.False(t, f.hold("env", "s-2"), "another attempt while s-1 holds the Environment's fence")
	assert.False(t, f.hold("other", "s-1"), "one attempt fences one Environment")
	f.release("s-2")
	assert.True(t, f.Held("env"), "a foreign suspend_id releases nothing")
	assert.Equal(t, "env", f.owner("s-1"))

	// Another Environment is fenced on its own, and not by env's attempt.
	assert.False(t, f.Held("other"))
	assert.False(t, f.Held(""), "Environment none is never fenced")
	assert.True(t, f.hold("other", "s-3"))
	assert.True(t, f.Held("other"))

	f.release("s-1")
	assert.False(t, f.Held("env"))
	assert.True(t, f.Held("other"), "releasing one Environment leaves the other fenced")
	assert.Empty(t, f.owner("s-1"))
	f.release("s-3")
	assert.False(t, f.Held("other"))
}

func TestFenceSavesOpenAttemptsForTheNextConnection(t *testing.T) {
	f := NewFence()
	f.hold("env", "s-1")
	f.Save(peer.Saved{Machine: "suspension", ID: "s-1", State: "suspended"}, false)
	assert.Len(t, f.Saved(), 1)

	// An instance that settled while its attempt still holds the fence
	// keeps its open state, so that a later resume can release it.
	f.Save(peer.Saved{Machine: "suspension", ID: "s-1", State: "resume_refused"}, true)
	saved := f.Saved()
	if assert.Len(t, saved, 1) {
		assert.Equal(t, "suspended", saved[0].State)
	}

	f.release("s-1")
	assert.Empty(t, f.Saved(), "a released attempt is not restored")
	f.Save(peer.Saved{Machine: "suspension", ID: "s-2", State: "quiesce_refused"}, true)
	assert.Empty(t, f.Saved(), "a settled attempt that holds nothing is forgotten")
}
