package gencli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Away from a checkout, diagram draws from the tables built into the
// binary; a --spec that does not exist is named.
func TestDiagramAwayFromTheCheckout(t *testing.T) {
	t.Chdir(t.TempDir())
	var out bytes.Buffer
	require.NoError(t, Diagram([]string{"run"}, &out, &bytes.Buffer{}, nil))
	assert.Contains(t, out.String(), "stateDiagram-v2")

	err := Diagram([]string{"run", "--spec", "missing"}, &bytes.Buffer{}, &bytes.Buffer{}, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--spec missing")
}
