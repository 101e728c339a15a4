package jsonl

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadLine(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader("{\"a\":1}\n"+strings.Repeat("x", 40)+"\n{\"last\":true}"), 16)
	line, err := ReadLine(br, 32)
	require.NoError(t, err)
	assert.Equal(t, "{\"a\":1}\n", string(line))
	_, err = ReadLine(br, 32)
	assert.ErrorIs(t, err, ErrLineTooLong, "a line over the bound, across several buffer fills")

	br = bufio.NewReader(strings.NewReader("{\"last\":true}"))
	line, err = ReadLine(br, 32)
	require.NoError(t, err)
	assert.Equal(t, `{"last":true}`, string(line), "a last line without its newline")
	_, err = ReadLine(br, 32)
	assert.ErrorIs(t, err, io.EOF)
}

// partial writes n bytes of the first write, then fails; closed records Close.
type partial struct {
	n      int
	writes int
	closed bool
	out    strings.Builder
}

func (p *partial) Write(b []byte) (int, error) {
	p.writes++
	if p.n >= 0 && p.writes == 1 {
		p.out.Write(b[:p.n])
		return p.n, errors.New("pipe: stopped")
	}
	p.out.Write(b)
	return len(b), nil
}
func (p *partial) Close() error                     { p.closed = true; return nil }
func (p *partial) SetWriteDeadline(time.Time) error { return nil }

var errGone = errors.New("test: closed")

func TestWriterBreaksOnAPartWayWriteAndAfterClose(t *testing.T) {
	ctx := context.Background()
	ok := &partial{n: -1}
	w := NewWriter(ok, errGone)
	require.NoError(t, w.WriteLine(ctx, []byte(`{"a":1}`)))
	assert.Equal(t, "{\"a\":1}\n", ok.out.String())
	require.NoError(t, w.Close())
	assert.True(t, ok.closed)
	assert.ErrorIs(t, w.WriteLine(ctx, []byte(`{}`)), errGone)
	assert.True(t, w.Broken())

	half := &partial{n: 3}
	w = NewWriter(half, errGone)
	require.Error(t, w.WriteLine(ctx, []byte(`{"a":1}`)))
	assert.True(t, w.Broken())
	assert.ErrorIs(t, w.WriteLine(ctx, []byte(`{}`)), ErrBrokenWrite, "no line boundary left to trust")

	none := &partial{n: 0}
	w = NewWriter(none, errGone)
	require.Error(t, w.WriteLine(ctx, []byte(`{}`)))
	assert.False(t, w.Broken(), "nothing was written: the stream is intact")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	assert.ErrorIs(t, NewWriter(&partial{n: -1}, errGone).WriteLine(cancelled, []byte(`{}`)), context.Canceled)
}
