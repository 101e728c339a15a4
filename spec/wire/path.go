package wire

import (
	"strings"
	"unicode/utf8"
)

// CheckWorkspacePath validates a workspace-relative path: UTF-8, at most
// MaxPathBytes, relative, no "..", "." or empty element, and no NUL, CR, LF
// or backslash. The empty path names the workspace root only where allowRoot
// is set (a directory read of the root).
func CheckWorkspacePath(p string, allowRoot bool) error {
	c := newChecker("")
	switch {
	case p == "":
		if !allowRoot {
			c.fail("", RuleRequired, "a path is required")
		}
	case len(p) > MaxPathBytes:
		c.fail("", RuleTooLarge, "longer than "+itoa(MaxPathBytes)+" bytes")
	case !utf8.ValidString(p):
		c.fail("", RuleFormat, "not valid UTF-8")
	case strings.ContainsAny(p, "\x00\r\n\\"):
		c.fail("", RuleFormat, "contains NUL, CR, LF or a backslash")
	case strings.HasPrefix(p, "/"):
		c.fail("", RuleFormat, "must be relative to the workspace, not absolute")
	default:
		for _, el := range strings.Split(p, "/") {
			switch el {
			case "..":
				c.fail("", RuleFormat, "must not contain ..")
			case ".", "":
				c.fail("", RuleFormat, "must be clean: no empty or . elements")
			}
		}
	}
	return c.err()
}

// CheckEntryName validates one directory entry name: a single component of
// at most MaxNameBytes of UTF-8, not "." or "..", with no separator or
// control character.
func CheckEntryName(name string) error {
	c := newChecker("")
	switch {
	case name == "":
		c.fail("", RuleRequired, "an entry needs a name")
	case len(name) > MaxNameBytes:
		c.fail("", RuleTooLarge, "longer than "+itoa(MaxNameBytes)+" bytes")
	case !utf8.ValidString(name):
		c.fail("", RuleFormat, "not valid UTF-8")
	case name == "." || name == "..":
		c.fail("", RuleFormat, ". and .. are not entries")
	case strings.ContainsAny(name, "/\\\x00\r\n"):
		c.fail("", RuleFormat, "must be a single component without separators or control characters")
	}
	return c.err()
}
