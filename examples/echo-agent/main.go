// Command echo-agent is a small agent for the exec adapter
// (docs/exec-adapter.md). It echoes the Turn's text as a few deltas, asks
// one permission question and waits for Core's decision, takes one active
// input and echoes it, then sends done. It uses only the standard library:
// any program that reads and writes JSON lines can do the same.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

type content struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

type message struct {
	Content []content `json:"content"`
}

// line is every line the adapter writes; only the members of its type are set.
type line struct {
	Type      string    `json:"type"`
	RunID     string    `json:"run_id"`
	Input     []message `json:"input"`
	InputID   string    `json:"input_id"`
	RequestID string    `json:"request_id"`
	Approved  bool      `json:"approved"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 4<<20)
	out := json.NewEncoder(os.Stdout)
	send := func(typ string, payload any) {
		if err := out.Encode(map[string]any{"type": typ, "payload": payload}); err != nil {
			fmt.Fprintln(os.Stderr, "echo-agent: write:", err)
			os.Exit(1)
		}
	}
	next := func() (line, bool) {
		for in.Scan() {
			var l line
			if err := json.Unmarshal(in.Bytes(), &l); err != nil {
				fmt.Fprintln(os.Stderr, "echo-agent: bad line:", err)
				os.Exit(2)
			}
			return l, true
		}
		return line{}, false
	}

	first, ok := next()
	if !ok || first.Type != "input" {
		fmt.Fprintln(os.Stderr, "echo-agent: the first line must be the input")
		os.Exit(2)
	}
	for _, w := range strings.Fields(text(first.Input)) {
		send("delta", map[string]any{"delta": w + " "})
	}

	// Nothing is written between a question and the next input, so the
	// order of what Core sees does not depend on timing.
	send("permission_request", map[string]any{"request_id": "echo-permission", "tool": "echo", "title": "May I echo your next input?"})
	var said strings.Builder
	for _, w := range strings.Fields(text(first.Input)) {
		said.WriteString(w + " ")
	}
	allowed := false
	for {
		l, ok := next()
		if !ok {
			send("done", map[string]any{})
			return
		}
		if l.Type == "permission_decision" && l.RequestID == "echo-permission" {
			allowed = l.Approved
			break
		}
	}
	if !allowed {
		send("done", map[string]any{"content": said.String() + "(not allowed)"})
		return
	}
	said.WriteString("(allowed)")

	// One active input: accept it and echo it in the final content. The
	// end of stdin ends the Turn.
	for {
		l, ok := next()
		if !ok {
			break
		}
		if l.Type == "prompt_steer" {
			send("input_accepted", map[string]any{"input_id": l.InputID})
			said.WriteString(" " + text(l.Input))
			break
		}
	}
	send("done", map[string]any{"content": said.String()})
}

func text(in []message) string {
	var parts []string
	for _, m := range in {
		for _, c := range m.Content {
			if c.Type == "input_text" {
				parts = append(parts, c.Text)
			}
		}
	}
	return strings.Join(parts, "\n\n")
}
