package modeltest_test

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentwire/agentwire/runtime/harness/modeltest"
)

func TestEventReader(t *testing.T) {
	in := ": a comment\n\n" +
		"event: one\ndata: {\"a\":1}\n\n" +
		"event: two\r\ndata: line1\r\ndata: line2\r\nid: 7\r\n\r\n" +
		"data: {\"type\":\"ping\"}\n\n"
	events, err := modeltest.ReadEvents(strings.NewReader(in))
	require.NoError(t, err)
	assert.Equal(t, []modeltest.Event{
		{Name: "one", Data: `{"a":1}`},
		{Name: "two", Data: "line1\nline2"},
		{Name: "", Data: `{"type":"ping"}`},
	}, events)

	var v struct{ A int }
	require.NoError(t, events[0].Decode(&v))
	assert.Equal(t, 1, v.A)
	_, err = events[1].Object()
	assert.ErrorContains(t, err, `decode event "two"`)
}

func TestEventReaderCutInsideAnEvent(t *testing.T) {
	events, err := modeltest.ReadEvents(strings.NewReader("event: one\ndata: 1\n\nevent: two\ndata: 2"))
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Equal(t, []modeltest.Event{{Name: "one", Data: "1"}}, events)

	er := modeltest.NewEventReader(strings.NewReader("event: one\n"))
	_, err = er.Next()
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)

	er = modeltest.NewEventReader(strings.NewReader("\n\n"))
	_, err = er.Next()
	assert.True(t, errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF))
}
