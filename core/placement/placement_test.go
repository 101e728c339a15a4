package placement_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentwire/agentwire/core/placement"
)

func TestPolicies(t *testing.T) {
	ds := []placement.Device{{ID: "c", Admissions: 0}, {ID: "a", Admissions: 3}, {ID: "b", Admissions: 0}}
	assert.Equal(t, []string{"a", "b", "c"}, placement.ByDeviceID{}.Order(placement.Turn{}, ds))
	assert.Equal(t, []string{"b", "c", "a"}, placement.LeastLoaded{}.Order(placement.Turn{}, ds))
	assert.Equal(t, "c", ds[0].ID, "the offered slice is not reordered")
}
