package modeltest

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Event is one server-sent event: its event name and its data lines
// joined by "\n".
type Event struct {
	Name string
	Data string
}

// Decode unmarshals the event's data as JSON into v.
func (e Event) Decode(v any) error {
	if err := json.Unmarshal([]byte(e.Data), v); err != nil {
		return fmt.Errorf("modeltest: decode event %q: %w", e.Name, err)
	}
	return nil
}

// Object decodes the event's data as a JSON object.
func (e Event) Object() (map[string]any, error) {
	var m map[string]any
	if err := e.Decode(&m); err != nil {
		return nil, err
	}
	return m, nil
}

// EventReader reads server-sent events from a stream (the text/event-stream
// format: "event:" and "data:" fields, events ended by a blank line;
// comments and other fields are skipped).
type EventReader struct {
	r *bufio.Reader
}

// NewEventReader reads events from r.
func NewEventReader(r io.Reader) *EventReader {
	return &EventReader{r: bufio.NewReader(r)}
}

// Next returns the next event. It returns io.EOF when the stream ended
// cleanly between events, and io.ErrUnexpectedEOF (wrapped) when it ended
// inside one; a transport error is returned wrapped as it came.
func (er *EventReader) Next() (Event, error) {
	var ev Event
	var data []string
	started := false
	for {
		line, err := er.r.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) {
				if started || line != "" {
					return Event{}, fmt.Errorf("modeltest: read event: %w", io.ErrUnexpectedEOF)
				}
				return Event{}, io.EOF
			}
			return Event{}, fmt.Errorf("modeltest: read event: %w", err)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if !started {
				continue
			}
			ev.Data = strings.Join(data, "\n")
			return ev, nil
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			ev.Name = value
			started = true
		case "data":
			data = append(data, value)
			started = true
		}
	}
}

// ReadEvents reads every event until the stream ends. It returns the
// events read so far with the error when the stream did not end cleanly.
func ReadEvents(r io.Reader) ([]Event, error) {
	er := NewEventReader(r)
	var out []Event
	for {
		ev, err := er.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

// sseWriter writes events to a streaming HTTP response, flushing each.
type sseWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

// send writes one event named name whose data is v as JSON; an event
// without a name has only its data line (the Gemini API's).
func (s *sseWriter) send(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("modeltest: encode event %s: %w", name, err)
	}
	head := ""
	if name != "" {
		head = "event: " + name + "\n"
	}
	if _, err := fmt.Fprintf(s.w, "%sdata: %s\n\n", head, b); err != nil {
		return fmt.Errorf("modeltest: write event %s: %w", name, err)
	}
	if err := s.rc.Flush(); err != nil {
		return fmt.Errorf("modeltest: flush event %s: %w", name, err)
	}
	return nil
}
