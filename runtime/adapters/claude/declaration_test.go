package claude

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness"
)

// Every capability is decided, and the declaration is valid.
func TestDeclarationDecidesEveryCapability(t *testing.T) {
	require.NoError(t, capabilities().Validate())
	require.NoError(t, harness.Declaration{Kind: Kind, Available: true, Version: PinnedVersion, Capabilities: capabilities()}.Validate())
}
