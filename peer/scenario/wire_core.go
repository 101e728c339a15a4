package scenario

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/coder/websocket"
)

// wireCore is the Core side of a shared wire transcript: a scripted
// Runtime plays the Runtime's lines against the real Core (see wire.go).
type wireCore struct {
	s   *scriptedRuntime
	now func() time.Time
}

func (w *wireCore) do(t *testing.T, d *datadriven.TestData) (string, error) {
	s, lines := w.s, parseWireLines(d.Expected)
	var out strings.Builder
	switch d.Cmd {
	case "connect", "reconnect":
		printed, err := s.connect(d)
		if err != nil {
			return "", err
		}
		if printed != "connected\n" {
			// Core refused the upgrade: "http: STATUS CODE" is its line.
			f := strings.Fields(printed)
			if len(f) >= 2 && f[0] == "http:" {
				printed = "core: refused upgrade " + strings.Join(f[1:], " ") + "\n"
			}
			out.WriteString(printed)
			lines = dropRefusal(lines)
		}
	case "disconnect":
		c, err := s.conn(d)
		if err != nil {
			return "", err
		}
		_ = c.ws.Close(websocket.StatusGoingAway, "scenario disconnect")
		for line := range c.frames {
			if !strings.HasPrefix(line, "core: closed ") {
				out.WriteString(s.b.Render(line) + "\n")
			}
		}
		for name, x := range s.conns {
			if x == c {
				delete(s.conns, name)
			}
		}
	case "frames", "silence", "runtime":
	case "core":
		if len(d.CmdArgs) == 0 {
			return "", fmt.Errorf("core: want a directive of the Core side")
		}
		sub := *d
		sub.Cmd, sub.CmdArgs = d.CmdArgs[0].Key, d.CmdArgs[1:]
		var own []string
		for _, l := range lines {
			if l.side == "" {
				own = append(own, l.text)
			}
		}
		sub.Expected = strings.Join(own, "\n")
		printed, err := s.opts.Core.Do(t, &sub, s.b)
		if err != nil {
			return printed, err
		}
		out.WriteString(s.bindPrinted(&sub, printed))
	default:
		return "", fmt.Errorf("unknown directive %q", d.Cmd)
	}
	if d.Cmd == "runtime" {
		for _, l := range lines {
			if l.side == "" {
				out.WriteString(l.text + "\n")
			}
		}
	}
	err := w.exchange(t, d, lines, &out)
	return out.String(), err
}

// exchange walks the frame lines: the Runtime's are sent (each applied by
// Core before the next), Core's are read and rendered.
func (w *wireCore) exchange(t *testing.T, d *datadriven.TestData, lines []wireLine, out *strings.Builder) error {
	s := w.s
	c, err := s.conn(d)
	if err != nil {
		for _, l := range lines {
			if l.side != "" {
				return err
			}
		}
		return nil // a Core directive before any connection
	}
	for _, l := range lines {
		switch l.side {
		case "runtime":
			if err := w.play(t, d, l); err != nil {
				return err
			}
			out.WriteString(l.written() + "\n")
		case "core":
			line, ok := next(c.frames, 10*time.Second)
			if !ok {
				out.WriteString("(no frame)\n")
				return nil
			}
			s.b.learn(l.text, line)
			out.WriteString(s.b.Render(line) + "\n")
		}
	}
	if d.Cmd == "silence" {
		for {
			line, ok := next(c.frames, s.opts.Silence)
			if !ok {
				break
			}
			out.WriteString(s.b.Render(line) + "\n")
		}
	}
	return nil
}

// play sends one of the Runtime's lines, minting what is unbound.
func (w *wireCore) play(t *testing.T, d *datadriven.TestData, l wireLine) error {
	s := w.s
	if l.typ == "heartbeat" {
		payload, err := heartbeatPayload(d)
		if err != nil {
			return err
		}
		return s.write(t, d, "heartbeat", "", payload)
	}
	text := l.id + " " + l.payload
	for _, name := range placeholders(text) {
		if _, ok := s.b.Value(name); !ok {
			v, number := mint(name, w.now)
			s.b.Bind(name, v)
			if number {
				text = strings.ReplaceAll(text, `"`+name+`"`, v)
			}
		}
	}
	for _, name := range placeholders(text) {
		if v, ok := s.b.Value(name); ok && isNumber(v) {
			text = strings.ReplaceAll(text, `"`+name+`"`, v)
		}
	}
	id, payload, _ := strings.Cut(s.b.Resolve(text), " ")
	if id == "-" {
		id = ""
	}
	return s.write(t, d, l.typ, id, payload)
}

func isNumber(v string) bool {
	if v == "" {
		return false
	}
	for _, r := range v {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
