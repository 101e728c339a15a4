package memory_test

import (
	"testing"

	"github.com/agentwire/agentwire/core/store/memory"
	"github.com/agentwire/agentwire/core/store/storetest"
)

func TestListSessions(t *testing.T) { storetest.RunListSessions(t, memory.New()) }
