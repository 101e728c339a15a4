package script

import (
	"context"
	"strconv"
	"strings"

	"github.com/agentwire/agentwire/runtime/harness"
	"github.com/agentwire/agentwire/wire"
)

// messages are the native messages of one Turn. Consecutive deltas are one
// message. When Core opted in with observe_messages (the adapter declares
// message_items, daemon-protocol.txt:55), each delta carries its message's
// item ID, an output_message in_progress precedes the message's first
// delta and one completed (with the message's text) follows its last; a
// message the Turn leaves early is incomplete. Without the opt-in the
// frames are what they were without it (daemon-protocol.txt:62).
type messages struct {
	observe bool
	runID   string
	n       int
	open    string // the item ID of the open message, "" when none
	text    strings.Builder
}

// delta emits one fragment of the open message, starting one if needed.
func (m *messages) delta(ctx context.Context, emit harness.Emit, text string, seq uint64) error {
	d := wire.Delta{Delta: text, Sequence: seq}
	if m.observe {
		if m.open == "" {
			m.n++
			// decision: an item ID is unique within the Run (the Run ID
			// scopes it); the protocol names no wider scope
			// (daemon-protocol.txt:55).
			m.open = "msg-" + m.runID + "-" + strconv.Itoa(m.n)
			if err := emit(ctx, wire.OutputMessage{ID: m.open, Status: wire.OutputInProgress}); err != nil {
				return err
			}
		}
		d.ItemID = m.open
		m.text.WriteString(text)
	}
	return emit(ctx, d)
}

// end reports the open message's end with status, if one is open.
func (m *messages) end(ctx context.Context, emit harness.Emit, status string) error {
	if m.open == "" {
		return nil
	}
	text := m.text.String()
	id := m.open
	m.open = ""
	m.text.Reset()
	return emit(ctx, wire.OutputMessage{ID: id, Status: status, Text: &text})
}
