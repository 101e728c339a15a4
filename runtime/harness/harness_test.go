package harness_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/internal/wiretest"
	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

type fake struct{ decl harness.Declaration }

func (f fake) Declaration() harness.Declaration { return f.decl }
func (f fake) NewExecutor(context.Context, harness.ExecutorConfig) (harness.Executor, error) {
	return nil, errors.New("unused")
}

// TestRegistryRejectsEveryOmittedCapability leaves each field undecided in
// turn: registration fails naming it and the registry stays unchanged.
func TestRegistryRejectsEveryOmittedCapability(t *testing.T) {
	r := harness.NewRegistry()
	for _, f := range wire.CapabilityFields() {
		caps := wiretest.Capabilities(wiretest.Unspecified(f.Name))
		err := r.Register(fake{harness.Declaration{Kind: "k", Available: true, Capabilities: caps}})
		require.Error(t, err, f.Name)
		assert.Contains(t, err.Error(), f.Name)
		assert.Empty(t, r.Kinds())
	}
	require.NoError(t, r.Register(fake{harness.Declaration{Kind: "k", Capabilities: wiretest.Capabilities()}}))
	assert.Error(t, r.Register(fake{harness.Declaration{Kind: "k", Capabilities: wiretest.Capabilities()}}), "a kind registers once")
	kinds := r.Kinds()
	require.Len(t, kinds, 1)
	assert.False(t, kinds[0].IsAvailable(), "an unavailable kind is declared, with its capabilities")
}

func TestDeclaredUnsupportedIsAContractViolation(t *testing.T) {
	err := harness.Classify(true, harness.ErrUnsupportedOperation)
	assert.ErrorIs(t, err, harness.ErrContractViolation)
	assert.NotErrorIs(t, harness.Classify(false, harness.ErrUnsupportedOperation), harness.ErrContractViolation)
	assert.NotErrorIs(t, harness.Classify(true, errors.New("native failure")), harness.ErrContractViolation)
}
