package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/agentwire/agentwire/internal/core/gateway"
	"github.com/agentwire/agentwire/wire"
)

// frameLine is one transcript line with its envelope decoded.
type frameLine struct {
	gateway.TranscriptLine
	env wire.Envelope
}

func readFrames(path string) ([]frameLine, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []frameLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var l frameLine
		if err := json.Unmarshal(sc.Bytes(), &l.TranscriptLine); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		_ = json.Unmarshal(l.Frame, &l.env)
		out = append(out, l)
	}
	return out, sc.Err()
}

// summary is a short, readable form of a payload: its scalar members
// first, then its objects and lists, each in key order, with long strings
// (IDs, text) and large nested values shortened, so that the fields two
// frames differ in (a state, a stage, a revision, a code) stay visible
// before the cut.
func summary(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		b, _ := json.Marshal(shorten(v))
		return cut(string(b))
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	composite := func(k string) bool {
		switch obj[k].(type) {
		case map[string]any, []any:
			return true
		}
		return false
	}
	sort.SliceStable(keys, func(i, j int) bool {
		if ci, cj := composite(keys[i]), composite(keys[j]); ci != cj {
			return !ci
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, _ := json.Marshal(shorten(obj[k]))
		if len(vb) > 48 && composite(k) {
			vb = []byte(string(vb[:1]) + "…" + string(vb[len(vb)-1:]))
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return cut(b.String())
}

// cut bounds a summary to one terminal line.
func cut(s string) string {
	if r := []rune(s); len(r) > 160 {
		return string(r[:160]) + "…"
	}
	return s
}

func shorten(v any) any {
	switch x := v.(type) {
	case string:
		if r := []rune(x); len(r) > 24 {
			return string(r[:12]) + "…"
		}
	case map[string]any:
		for k, e := range x {
			x[k] = shorten(e)
		}
	case []any:
		for i, e := range x {
			x[i] = shorten(e)
		}
	}
	return v
}

// inOrder sorts the frames by the time Core recorded each (a frame it
// sent is recorded when written, one it received when read), so an
// answer never shows above what it answers.
func inOrder(lines []frameLine) []frameLine {
	out := append([]frameLine(nil), lines...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// folded drops the heartbeats after the first: they repeat the declaration.
func folded(lines []frameLine) ([]frameLine, int) {
	var out []frameLine
	seen, dropped := false, 0
	for _, l := range lines {
		if l.env.Type == wire.TypeHeartbeat {
			if seen {
				dropped++
				continue
			}
			seen = true
		}
		out = append(out, l)
	}
	return out, dropped
}

// renderSummary is the terminal's view: one aligned line per frame,
// heartbeats after the first folded.
func renderSummary(lines []frameLine) string {
	var b strings.Builder
	list, dropped := folded(inOrder(lines))
	for _, l := range list {
		arrow := "Runtime → Core"
		if l.Dir == "out" {
			arrow = "Core → Runtime"
		}
		payload := summary(l.env.Payload)
		if l.env.Type == wire.TypeHeartbeat {
			payload = "(capability declaration)"
		}
		fmt.Fprintf(&b, "%s  %s  %-26s %-14s %s\n", l.At.Format("15:04:05.000"), arrow, l.env.Type, shortID(l.env.ID), payload)
	}
	if dropped > 0 {
		fmt.Fprintf(&b, "(%d more heartbeats)\n", dropped)
	}
	return b.String()
}

// renderTranscript is transcript.txt: every frame whole, in the order Core
// recorded them, each after its time and direction.
func renderTranscript(lines []frameLine) string {
	var b strings.Builder
	for _, l := range inOrder(lines) {
		arrow := "Runtime → Core"
		if l.Dir == "out" {
			arrow = "Core → Runtime"
		}
		fmt.Fprintf(&b, "%s  %s  %s\n", l.At.UTC().Format("2006-01-02T15:04:05.000000Z"), arrow, strings.TrimSpace(string(l.Frame)))
	}
	return b.String()
}

func shortID(id string) string {
	if id == "" {
		return "-"
	}
	if r := []rune(id); len(r) > 14 {
		return string(r[:13]) + "…"
	}
	return id
}

// mermaidText keeps a message label inside Mermaid's syntax.
func mermaidText(s string) string {
	r := strings.NewReplacer(";", ",", "#", "", "\n", " ", ":", " ", "\"", "'", "{", "(", "}", ")")
	return r.Replace(s)
}

// renderSequence draws the API calls of the demo and the frames, in time
// order, as a Mermaid sequence diagram.
func renderSequence(lines []frameLine, steps []demoStep, runtimeLabel string) string {
	type item struct {
		at   time.Time
		line string
	}
	var items []item
	for _, s := range steps {
		items = append(items, item{s.at, "  Demo->>Core: " + mermaidText(s.text)})
	}
	list, _ := folded(lines)
	for _, l := range list {
		label := l.env.Type
		switch l.env.Type {
		case wire.TypeDelta:
			var p wire.Delta
			_ = json.Unmarshal(l.env.Payload, &p)
			label += " '" + p.Delta + "'"
		case wire.TypePromptSteerAck:
			var p wire.PromptSteerAck
			_ = json.Unmarshal(l.env.Payload, &p)
			if p.Accepted != nil && *p.Accepted {
				label += " accepted"
			} else if p.Written {
				label += " written"
			}
		}
		dir := "  Runtime->>Core: "
		if l.Dir == "out" {
			dir = "  Core->>Runtime: "
		}
		items = append(items, item{l.At, dir + mermaidText(label)})
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].at.Before(items[j].at) })
	var b strings.Builder
	b.WriteString("sequenceDiagram\n  participant Demo as Demo (public API)\n  participant Core\n  participant Runtime as Runtime (" + runtimeLabel + ")\n")
	for _, it := range items {
		b.WriteString(it.line + "\n")
	}
	return b.String()
}
