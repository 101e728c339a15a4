package script

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Duration is a step's wait, written as a Go duration string ("2s",
// "150ms"): a bare number would be nanoseconds, which nobody means.
type Duration time.Duration

// UnmarshalJSON takes a duration string only.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf(`a duration is a string such as "2s" or "150ms", not %s`, b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Load reads the script in the file at path (Parse).
func Load(path string) (Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Script{}, fmt.Errorf("script: %w", err)
	}
	return Parse(path, b)
}

// Parse reads a script strictly: a field the format does not have, a
// value of the wrong type, trailing data and a step that sets no action or
// several are errors, each naming the file, the line and the field or step
// (docs/script-adapter.md describes the format). name is the file's name
// in the errors.
func Parse(name string, b []byte) (Script, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return Script{}, parseError(name, b, dec.InputOffset(), err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Script{}, fmt.Errorf("%s:%d: data after the script's object", name, line(b, dec.InputOffset()))
	}
	for i, st := range s.Steps {
		if err := st.check(); err != nil {
			return Script{}, fmt.Errorf("%s:%d: steps[%d]: %w", name, stepLine(b, i), i, err)
		}
	}
	switch s.Input {
	case "", InputAccept, InputWritten, InputHang, InputFail:
	default:
		return Script{}, fmt.Errorf("%s: input %q: want %s, %s, %s or %s", name, s.Input, InputAccept, InputWritten, InputHang, InputFail)
	}
	if s.CloseFailures < 0 {
		return Script{}, fmt.Errorf("%s: close_failures is negative", name)
	}
	return s, nil
}

// check: exactly one action, withdraw only with permission.
func (st Step) check() error {
	var set []string
	add := func(name string, on bool) {
		if on {
			set = append(set, name)
		}
	}
	add("delta", st.Delta != "")
	add("thinking", st.Thinking != "")
	add("usage", st.Usage != nil)
	add("tool_call", st.ToolCall != nil)
	add("echo", st.Echo)
	add("error", st.Error != "")
	add("delay", st.Delay > 0)
	add("hang", st.Hang)
	add("hold_cancel", st.HoldCancel != "")
	add("fail", st.Fail != "")
	add("permission", st.Permission != nil)
	add("choice", st.Choice != nil)
	add("function", st.Function != nil)
	add("await_input", st.AwaitInput)
	if st.Withdraw && st.Permission == nil {
		return errors.New("withdraw goes with permission")
	}
	switch len(set) {
	case 1:
		return nil
	case 0:
		return errors.New("a step sets one action (delta, thinking, usage, tool_call, echo, error, delay, hang, hold_cancel, fail, permission, choice, function or await_input); this one sets none")
	default:
		return fmt.Errorf("a step sets one action; this one sets %s", strings.Join(set, " and "))
	}
}

// parseError says where a decoding error is: the line of its offset, and
// the field for a value of the wrong type or a field the format lacks.
func parseError(name string, b []byte, at int64, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("%s:%d: not valid JSON: %v", name, line(b, syn.Offset), syn)
	case errors.As(err, &typ):
		return fmt.Errorf("%s:%d: %s: a %s where the format has a %s", name, line(b, typ.Offset), typ.Field, typ.Value, typ.Type)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%s: empty: a script is a JSON object with steps", name)
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if field, ok := strings.CutPrefix(msg, "unknown field "); ok {
		return fmt.Errorf("%s:%d: unknown field %s (docs/script-adapter.md lists the fields)", name, line(b, at), field)
	}
	return fmt.Errorf("%s:%d: %s", name, line(b, at), msg)
}

// line is the 1-based line of byte offset at.
func line(b []byte, at int64) int {
	at = min(max(at, 0), int64(len(b)))
	return 1 + bytes.Count(b[:at], []byte("\n"))
}

// stepLine is the line where steps[i] starts, found by decoding the
// steps array token by token; 1 when it cannot be found.
func stepLine(b []byte, i int) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return 1
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return 1
		}
		if key != "steps" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return 1
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return 1
		}
		for n := 0; dec.More(); n++ {
			start := dec.InputOffset()
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return 1
			}
			if n == i {
				// start is just past the separator; the step begins at
				// the first non-space byte after it.
				rest := bytes.TrimLeft(b[start:], " \t\r\n,")
				return line(b, int64(len(b)-len(rest)))
			}
		}
	}
	return 1
}
