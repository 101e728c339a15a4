package gen

import (
	"strings"
	"unicode/utf8"
)

// summary fits prefix+doc on one comment line of at most width columns
// (runes): the whole doc when it fits, else its longest leading part that
// ends a clause (at ';', ':', '.' or ',', or before a parenthesis), else its
// longest leading part that ends a word, marked as cut with "…". A constant
// carries this one line so that the const blocks stay one line per value;
// the full doc is on the machine's page (docs/machines/<m>.md) and, for a
// guard or an action, on its hook method.
func summary(prefix, doc string, width int) string {
	doc = strings.Join(strings.Fields(doc), " ")
	if utf8.RuneCountInString(prefix+doc) <= width {
		return prefix + doc
	}
	room := width - utf8.RuneCountInString(prefix) - 1 // the "…"
	words := ""                                        // the longest word cut so far
	clause := ""                                       // the longest clause cut so far
	for i, r := range doc {
		if r != ' ' {
			continue
		}
		head := doc[:i]
		if utf8.RuneCountInString(head) > room {
			break
		}
		words = head
		if strings.HasSuffix(head, ";") || strings.HasSuffix(head, ":") ||
			strings.HasSuffix(head, ".") || strings.HasSuffix(head, ",") ||
			strings.HasPrefix(doc[i:], " (") {
			clause = head
		}
	}
	// A clause reads better than a word cut unless it throws away most of
	// the line.
	cut := words
	if utf8.RuneCountInString(clause)*3 >= utf8.RuneCountInString(words)*2 {
		cut = clause
	}
	cut = strings.TrimRight(cut, ";:,. ")
	if cut == "" { // one word longer than the line: keep it whole
		return prefix + doc
	}
	return prefix + cut + "…"
}
