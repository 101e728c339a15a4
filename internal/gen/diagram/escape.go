package diagram

import (
	"strings"
	"time"
)

// oneLine folds line breaks into spaces: every output format here treats a
// newline as the end of a statement, a table row or a label.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// mermaidEscaper rewrites what Mermaid's state-diagram lexer or its HTML
// sanitiser would act on. Mermaid ends a label at '#', ';' or "::" and
// strips anything tag-like, so those become its own #code; entities, which
// Mermaid swaps out before parsing and decodes afterwards. '%' is escaped so
// "%%" can never start a comment.
var mermaidEscaper = strings.NewReplacer(
	"#", "#35;",
	";", "#59;",
	":", "#58;",
	"%", "#37;",
	"&", "#amp;",
	"<", "#lt;",
	">", "#gt;",
	`"`, "#quot;",
	"{", "#123;",
	"}", "#125;",
)

// mermaidText makes s safe as a Mermaid transition label or state description.
func mermaidText(s string) string { return mermaidEscaper.Replace(oneLine(s)) }

// dotEscaper escapes a DOT double-quoted string. Backslashes are doubled so
// Graphviz does not read "\n", "\l" or "\N" in spec text as label escapes.
var dotEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

// dotQuote renders s as a DOT double-quoted string (IDs and plain labels).
func dotQuote(s string) string { return `"` + dotEscaper.Replace(oneLine(s)) + `"` }

// htmlEscaper escapes text placed inside a Graphviz HTML-like label, which
// Graphviz parses as XML.
var htmlEscaper = strings.NewReplacer(
	"&", "&amp;",
	"<", "&lt;",
	">", "&gt;",
	`"`, "&quot;",
)

func htmlText(s string) string { return htmlEscaper.Replace(oneLine(s)) }

// mdEscaper keeps spec prose from turning into HTML on GitHub: a doc such as
// "fewer than <limit> leases" would otherwise lose "<limit>" as an unknown tag.
var mdEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// mdText makes s safe as one Markdown paragraph.
func mdText(s string) string { return mdEscaper.Replace(oneLine(s)) }

// mdCell makes s safe inside a GFM table cell, where an unescaped '|' (even
// inside a code span) starts the next column.
func mdCell(s string) string { return strings.ReplaceAll(mdText(s), "|", `\|`) }

// duration prints a timer the way the spec writes it ("5m", "1m30s"), not
// time.Duration's "5m0s", so labels stay short.
func duration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
