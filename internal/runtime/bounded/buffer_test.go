package bounded

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBufferKeepsTheFirstBytes(t *testing.T) {
	b := &Buffer{Max: 5}
	n, err := b.Write([]byte("abc"))
	assert.NoError(t, err)
	assert.Equal(t, 3, n)
	assert.Equal(t, "abc", b.String())
	n, err = b.Write([]byte("defgh"))
	assert.NoError(t, err)
	assert.Equal(t, 5, n, "a write is never short: the process's copier must not stop")
	assert.Equal(t, "abcde …(truncated)", b.String())
	_, _ = b.Write([]byte("more"))
	assert.Equal(t, "abcde …(truncated)", b.String())

	nl := &Buffer{Max: 64}
	_, _ = nl.Write([]byte("error: boom\n\n"))
	assert.Equal(t, "error: boom", nl.String(), "trailing newlines are not part of a log line")
}
