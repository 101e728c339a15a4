package bounded

import "unicode/utf8"

// Text is s cut to at most max bytes on a rune boundary, with "…" after a
// cut: an error text a CLI wrote may be any length, a frame's is not.
func Text(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
