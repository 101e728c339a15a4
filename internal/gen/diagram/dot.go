package diagram

import (
	"bytes"
	"strings"

	"github.com/agentwire/agentwire/spec"
)

// DOT renders m as a Graphviz digraph, the input of SVG. The first line is a
// // comment with Header, which SVG carries over into its output.
//
// Edges carry the same labels as Mermaid, plus each candidate's effects in a
// smaller grey line: the picture is the one place a reader sees what a
// transition does without reading the tables. Terminal states differ in
// both colour and shape (success a double circle, failure and unknown a
// double octagon, unknown also dashed), so the picture survives greyscale.
// The graph runs in the direction layouts chooses for the machine.
func DOT(m *spec.Machine) []byte {
	var b bytes.Buffer
	b.WriteString("// " + Header(m.Name) + "\n")
	b.WriteString("digraph " + dotQuote(m.Name) + " {\n")
	b.WriteString(`	graph [label=` + dotQuote(m.Name) + ` labelloc=t rankdir=` + layoutOf(m).dot + ` pad=0.3 fontname="Helvetica" fontsize=16 nodesep=0.5 ranksep=0.6];` + "\n")
	b.WriteString(`	node [shape=box style="rounded,filled" fillcolor="#f5f5f5" color="#424242" fontname="Helvetica" fontsize=12];` + "\n")
	b.WriteString(`	edge [color="#424242" fontname="Helvetica" fontsize=10];` + "\n")

	// The entry point is a named node of its own; spec names start with a
	// letter, so "__start" cannot collide with a state.
	if init := m.Initial(); init != nil {
		b.WriteString("\n" + `	"__start" [shape=point width=0.15 label="" id=` + dotQuote(StartID) + `];` + "\n")
		b.WriteString(`	"__start" -> ` + dotQuote(init.Name) + ` [id=` + dotQuote(EntryID(init.Name)) + `];` + "\n")
	}

	b.WriteString("\n")
	for _, s := range m.States {
		b.WriteString("\t" + dotQuote(s.Name) + dotAttrs(append([]string{"id=" + dotQuote(StateID(s.Name))}, nodeAttrs(s)...)) + ";\n")
	}

	b.WriteString("\n")
	for _, ed := range edges(m) {
		b.WriteString("\t" + dotQuote(ed.from.Name) + " -> " + dotQuote(ed.to.Name) +
			dotAttrs([]string{"id=" + dotQuote(TransitionID(ed.from.Name, ed.to.Name)), "class=" + dotQuote(edgeClass(ed)), "label=<" + edgeLabel(ed) + ">"}) + ";\n")
	}
	b.WriteString("}\n")
	return b.Bytes()
}

// nodeAttrs lists the attributes that set s apart from a plain state.
func nodeAttrs(s *spec.State) []string {
	var attrs []string
	if len(s.Timers) > 0 {
		attrs = append(attrs, "label=<"+htmlText(s.Name)+
			`<br/><font point-size="9">⏱ `+htmlText(strings.Join(timerNames(s), ", "))+"</font>>")
	}
	switch s.Outcome {
	case spec.OutcomeSuccess:
		attrs = append(attrs, "shape=doublecircle", `style="filled"`, `fillcolor="#e8f5e9"`, `color="#2e7d32"`, "penwidth=1.5")
	case spec.OutcomeFailure:
		attrs = append(attrs, "shape=doubleoctagon", `style="filled"`, `fillcolor="#ffebee"`, `color="#c62828"`, "penwidth=1.5")
	case spec.OutcomeUnknown:
		attrs = append(attrs, "shape=doubleoctagon", `style="filled,dashed"`, `fillcolor="#fff8e1"`, `color="#f9a825"`, "penwidth=1.5")
	}
	return attrs
}

// edgeLabel is an HTML-like label: one line per candidate, each followed by
// its effects, if any, in a smaller grey font, wrapped to keep the label
// narrow.
func edgeLabel(ed *edge) string {
	var lines []string
	for _, a := range ed.arcs {
		lines = append(lines, htmlText(a.trigger()))
		for _, ef := range a.effects() {
			lines = append(lines, `<font point-size="8" color="#757575">`+htmlText(ef)+"</font>")
		}
	}
	return strings.Join(lines, "<br/>")
}

func dotAttrs(attrs []string) string {
	if len(attrs) == 0 {
		return ""
	}
	return " [" + strings.Join(attrs, " ") + "]"
}
