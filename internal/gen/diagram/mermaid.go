package diagram

import (
	"bytes"
	"strings"

	"github.com/agentwire/agentwire/spec"
)

// Mermaid renders m as a Mermaid stateDiagram-v2, the format GitHub draws
// inline in Markdown. The first line is a %% comment with Header.
func Mermaid(m *spec.Machine) []byte {
	var b bytes.Buffer
	b.WriteString("%% " + Header(m.Name) + "\n")
	writeMermaid(&b, m)
	return b.Bytes()
}

// outcomeStyles colours terminal states by how the lifecycle settled. The
// unknown outcome is also dashed so it stays distinct without colour.
var outcomeStyles = []struct {
	outcome spec.Outcome
	style   string
}{
	{spec.OutcomeSuccess, "fill:#e8f5e9,stroke:#2e7d32,stroke-width:2px,color:#1b5e20"},
	{spec.OutcomeFailure, "fill:#ffebee,stroke:#c62828,stroke-width:2px,color:#b71c1c"},
	{spec.OutcomeUnknown, "fill:#fff8e1,stroke:#f9a825,stroke-width:2px,stroke-dasharray:5 5,color:#7a4f01"},
}

// writeMermaid writes the diagram without the header, so Page can embed it
// under its own.
func writeMermaid(b *bytes.Buffer, m *spec.Machine) {
	const indent = "    "
	b.WriteString("stateDiagram-v2\n")
	b.WriteString(indent + "accTitle: " + mermaidText(m.Name+" lifecycle") + "\n")
	b.WriteString(indent + "direction " + layoutOf(m).mermaid + "\n")

	all := edges(m)
	loops := map[*spec.State]*edge{}
	for _, ed := range all {
		if ed.from == ed.to {
			loops[ed.from] = ed
		}
	}
	for _, s := range m.States {
		if label := mermaidLabel(s, loops[s]); label != mermaidID(s) {
			b.WriteString(indent + `state "` + label + `" as ` + mermaidID(s) + "\n")
		}
	}

	if init := m.Initial(); init != nil {
		b.WriteString(indent + "[*] --> " + mermaidID(init) + "\n")
	}
	for _, ed := range all {
		if ed.from == ed.to {
			continue
		}
		lines := ed.triggerLines()
		for i, l := range lines {
			lines[i] = mermaidText(l)
		}
		b.WriteString(indent + mermaidID(ed.from) + " --> " + mermaidID(ed.to) +
			" : " + strings.Join(lines, "<br/>") + "\n")
	}
	for _, s := range m.States {
		if s.Terminal() {
			b.WriteString(indent + mermaidID(s) + " --> [*]\n")
		}
	}

	for _, st := range outcomeStyles {
		var ids []string
		for _, s := range m.States {
			if s.Outcome == st.outcome {
				ids = append(ids, mermaidID(s))
			}
		}
		if len(ids) == 0 {
			continue
		}
		name := st.outcome.String()
		b.WriteString(indent + "classDef " + name + " " + st.style + "\n")
		b.WriteString(indent + "class " + strings.Join(ids, ",") + " " + name + "\n")
	}
}

// mermaidKeywords are the words the state-diagram lexer reads as syntax when
// they start a statement. Spec names are lower_snake_case identifiers, so
// these are the only names that need an alias.
var mermaidKeywords = map[string]bool{
	"state": true, "note": true, "end": true, "class": true, "classdef": true,
	"style": true, "direction": true, "scale": true, "hide": true, "as": true,
	"left": true, "right": true, "of": true, "default": true, "click": true,
	"href": true, "acctitle": true, "accdescr": true, "statediagram": true,
}

// mermaidID is the identifier a state has in the diagram: its name, or the
// name with a trailing underscore (declared with `state "name" as name_`)
// when the name is a Mermaid keyword.
func mermaidID(s *spec.State) string {
	if mermaidKeywords[s.Name] {
		return s.Name + "_"
	}
	return s.Name
}

// mermaidLabel is the text Mermaid draws in the box of s: its name, one line
// per timer armed in it (⏱) and one per trigger of its internal transitions
// (↺, the page's sign for them), which loop is the self-loop edge of s, if any.
//
// Internal transitions are listed in the box, as UML does, rather than drawn
// as self-loops: Mermaid's layout gives a self-loop's label no room of its
// own, so it lay over the neighbouring states and labels (run's streaming,
// preparation's ready and starting).
//
// Everything is one label declared with `state "…" as id` rather than
// separate `id : ⏱ timer` description lines. Mermaid starts every box with
// its id as a placeholder and replaces that placeholder with the first
// description it meets, so a lone description line hides the state's name (a
// box reading "⏱ admission_expiry" instead of "ready"), and whether a second
// line brings the name back as a title depends on how the state was
// declared. A single declared label has one reading in every Mermaid
// version.
func mermaidLabel(s *spec.State, loop *edge) string {
	label := mermaidText(s.Name)
	for _, t := range s.Timers {
		label += "<br/>⏱ " + mermaidText(t.Name)
	}
	if loop != nil {
		for _, l := range loop.triggerLines() {
			label += "<br/>↺ " + mermaidText(l)
		}
	}
	return label
}
