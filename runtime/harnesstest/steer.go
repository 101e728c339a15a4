package harnesstest

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// Active input (prompt_steer): the native write returns once the input is
// written (Steer nil), the adapter reports its native consumption later
// (Notify, accepted), and the Turn uses it (daemon-protocol.txt:124-144).

const steered = "also mention the weather"

// steerTurn runs the Turn both steering scenarios look at, once per run.
func (k *kit) steerTurn(t *testing.T, name, capability string) *Result {
	t.Helper()
	plan := Plan{{Say: []string{"Before."}}, {AwaitInput: true}}
	s := k.scenario(t, name, capability, plan, nil, nil)
	r, _ := k.turn(s, nil, drive{steer: text(steered)})
	completed(t, r)
	require.Len(t, r.Steers, 1, "the Turn emitted nothing, so no input was written")
	return r
}

func (k *kit) steering(t *testing.T) {
	r := k.steerTurn(t, "steering", "steering")
	require.NoError(t, r.Steers[0].Err, "the native write of the active input failed")
	out := r.Output()
	i := strings.Index(out, steered)
	require.GreaterOrEqual(t, i, 0, "the Turn did not use the active input (answer %q)", out)
	assert.Greater(t, i, strings.Index(out, "Before."), "the input was used after it was written")
	verify(t, r, false)

	k.run(t, "harness", "steering/run_inactive", "steering", func(t *testing.T) {
		// A Run that is not running on the Executor takes no input.
		s := k.scenario(t, "steering/run_inactive", "steering", Plan{{Say: []string{"Idle."}}}, nil, nil)
		r, exe := k.turn(s, nil, drive{keep: true})
		completed(t, r)
		defer k.close(t, exe)
		st, ok := exe.(harness.Steerer)
		require.True(t, ok, "a Harness that declares steering takes active input")
		ctx, cancel := k.deadline()
		defer cancel()
		err := st.Steer(ctx, r.RunID, "kit-late-input", text("too late"))
		assert.ErrorIs(t, err, harness.ErrRunInactive, "an input for a settled Run")
	})
}

// receipts: written, then accepted exactly once for that input ID.
func (k *kit) receipts(t *testing.T) {
	r := k.steerTurn(t, "durable_input_receipts", "durable_input_receipts")
	require.NoError(t, r.Steers[0].Err, "no written receipt: the native write failed")
	id := r.Steers[0].InputID
	var accepted int
	for _, n := range r.Notices {
		assert.Equal(t, id, n.InputID, "a notice for an input the kit never wrote")
		if n.Accepted {
			accepted++
		} else {
			t.Errorf("the input was refused after its write: %s %s", n.Code, n.Error)
		}
	}
	assert.Equal(t, 1, accepted, "the native consumption is reported once (accepted)")
	verify(t, r, false)
}

// steerRefused: an active input the declaration does not take is refused
// before anything is written.
func (k *kit) steerRefused(t *testing.T, name, capability string, in wire.MessageInput) {
	plan := Plan{{Say: []string{"Listening."}}, {Hang: true}}
	s := k.scenario(t, name, capability, plan, nil, nil)
	r, _ := k.turn(s, nil, drive{steer: in, cancelAt: "Listening."})
	returned(t, r)
	require.Len(t, r.Steers, 1, "the Turn emitted nothing")
	err := r.Steers[0].Err
	assert.True(t, errors.Is(err, harness.ErrUnsupportedOperation), "the input is refused as unsupported (got %v)", err)
	for _, n := range r.Notices {
		assert.False(t, n.Accepted, "a refused input was reported consumed")
	}
	if n := r.Steers[0].NativeCalls; n >= 0 {
		assert.Zero(t, n, "the refused input started a native operation")
	}
}
