package memory_test

import (
	"testing"

	"github.com/agentwire/agentwire/core/store"
	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/core/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return memory.New() })
}

func TestCredentialsConformance(t *testing.T) {
	storetest.RunCredentials(t, func(*testing.T) store.Credentials { return memory.New() })
}
