package storetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/core/store/storetest"
)

func TestFailingFailsWritesOnCommand(t *testing.T) {
	ctx := context.Background()
	f := storetest.NewFailing(memory.New())
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	env := func(id string) error {
		return f.CreateEnvironment(ctx, store.Environment{ID: id, Project: "p", Type: "none", CreatedAt: now})
	}
	require.NoError(t, env("e1"), "writes pass until told otherwise")

	f.FailAfter(1)
	require.NoError(t, env("e2"), "the one write FailAfter lets pass")
	err := env("e3")
	require.ErrorIs(t, err, storetest.ErrInjected)
	assert.Contains(t, err.Error(), "CreateEnvironment")
	_, err = f.Commit(ctx, store.Batch{})
	require.ErrorIs(t, err, storetest.ErrInjected, "every write fails until Heal")
	_, err = f.GetEnvironment(ctx, "e2")
	require.NoError(t, err, "reads pass")
	_, err = f.GetEnvironment(ctx, "e3")
	require.ErrorIs(t, err, store.ErrNotFound, "the failed write wrote nothing")
	assert.Equal(t, 2, f.Failures())

	f.Only("Commit")
	require.NoError(t, env("e4"), "only Commit fails now")
	_, err = f.Commit(ctx, store.Batch{})
	require.ErrorIs(t, err, storetest.ErrInjected)

	f.Heal()
	_, err = f.Commit(ctx, store.Batch{})
	require.NoError(t, err)
	f.Only()
	f.Fail()
	require.ErrorIs(t, env("e5"), storetest.ErrInjected)
}
