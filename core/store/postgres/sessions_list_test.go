package postgres_test

import (
	"testing"

	"github.com/agentwire/agentwire/core/store/storetest"
)

func TestListSessions(t *testing.T) {
	serverDSN(t)
	s := open(t, freshDSN(t))
	t.Cleanup(func() { _ = s.Close() })
	storetest.RunListSessions(t, s)
}
