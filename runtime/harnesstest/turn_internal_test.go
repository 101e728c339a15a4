package harnesstest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentwire/agentwire/internal/runtime/adapters/script"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// leftOver is the resource a failed factory hands back with its error:
// an Executor whose start failed and whose own close was not confirmed.
type leftOver struct {
	closes    atomic.Int32
	closeFail error
}

func (e *leftOver) Run(context.Context, harness.Turn, harness.Emit) (wire.Done, error) {
	return wire.Done{}, errors.New("a failed factory's resource never runs a Turn")
}

func (e *leftOver) Close(context.Context) error {
	e.closes.Add(1)
	return e.closeFail
}

// failingFactory is the script adapter whose NewExecutor fails with err
// and returns left with it.
type failingFactory struct {
	*script.Adapter
	left *leftOver
	err  error
}

func (f *failingFactory) NewExecutor(context.Context, harness.ExecutorConfig) (harness.Executor, error) {
	return f.left, f.err
}

// TestTurnClosesAFailedFactoryResource: when NewExecutor fails and still
// returns an Executor (daemon-protocol.txt:177), the kit keeps both: the
// Turn reports the preparation error and the resource is closed, a close
// that fails being recorded as any Executor the kit could not close.
func TestTurnClosesAFailedFactoryResource(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, closeFails := range []bool{false, true} {
		t.Run(fmt.Sprintf("close_fails=%v", closeFails), func(t *testing.T) {
			left := &leftOver{}
			if closeFails {
				left.closeFail = errors.New("the process did not exit")
			}
			startErr := errors.New("the native start failed")
			a := &failingFactory{Adapter: script.New(script.Script{}), left: left, err: startErr}
			k := newKit(Config{Adapter: a, Timeout: 10 * time.Second}, a.Declaration())
			s := &Scenario{Name: "failed_factory", SessionID: k.newSession(),
				Config: wire.PromptRequest{AgentKind: a.Declaration().Kind, StrictResume: true}}

			r, exe := k.turn(s, nil, drive{})
			require.ErrorIs(t, r.Prepared, startErr)
			assert.True(t, r.Returned)
			assert.Nil(t, exe, "the kit closed the resource itself; nothing is handed on")
			assert.Equal(t, int32(1), left.closes.Load(), "the resource the failed factory returned was not closed")
			if closeFails {
				assert.Equal(t, []error{left.closeFail}, k.closeErrs, "the failed close is reported")
			} else {
				assert.Empty(t, k.closeErrs)
			}
		})
	}
}
