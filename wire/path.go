package wire

import (
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Two path forms address the workspace. workspace_read and workspace_write
// use workspace-relative paths (CheckWorkspacePath); runtime_prepare uses
// absolute logical paths under /workspace that the Runtime resolves against
// its own workspace (CheckLogicalPath). Each form is checked only by its own
// function, so neither accepts the other's; both share the byte rules of
// checkPathBytes.

// CheckWorkspacePath validates a workspace-relative path: UTF-8, at most
// MaxPathBytes, relative (no leading slash, no drive letter), no "..", "."
// or empty element, and no NUL, CR, LF or backslash. The empty path names the workspace root only where allowRoot
// is set (a directory read of the root).
func CheckWorkspacePath(p string, allowRoot bool) error {
	c := newChecker("")
	switch {
	case p == "":
		if !allowRoot {
			c.fail("", RuleRequired, "a path is required")
		}
	case !checkPathBytes(c, p):
	case strings.HasPrefix(p, "/"):
		c.fail("", RuleFormat, "must be relative to the workspace, not absolute")
	case hasDrivePrefix(p):
		// decision: "C:/x" or "C:x" is absolute or drive-relative on
		// Windows, where a Runtime joining it to its root would leave the
		// workspace; it is refused on every platform so that the same
		// frame means the same file everywhere (daemon-protocol.txt:185:
		// every platform uses the daemon's Go implementation).
		c.fail("", RuleFormat, "must be relative to the workspace, not start with a drive letter")
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

// CheckLogicalPath validates a runtime_prepare path: the logical, absolute
// form the Runtime resolves against its own workspace. It must be clean
// (path.Clean leaves it unchanged), UTF-8, at most MaxPathBytes, free of
// backslash, NUL, CR and LF, and lie under /workspace/; /workspace itself is
// accepted only where allowRoot is set (a setup cwd, a source directory).
// The error is a *FieldError with an empty Field.
func CheckLogicalPath(p string, allowRoot bool) error {
	c := newChecker("")
	switch {
	case p == "":
		c.fail("", RuleRequired, "a path is required")
	case !checkPathBytes(c, p):
	case path.Clean(p) != p:
		c.fail("", RuleFormat, "must be clean: no ., .., empty element or trailing slash")
	case p == "/workspace":
		if !allowRoot {
			c.fail("", RuleFormat, "must name something under /workspace/, not the workspace itself")
		}
	case !strings.HasPrefix(p, "/workspace/"):
		c.fail("", RuleFormat, "must be an absolute path under /workspace/")
	}
	return c.err()
}

// checkPathBytes applies the rules both path forms share, whatever their
// grammar: at most MaxPathBytes of UTF-8 without NUL, CR, LF or backslash.
// It reports whether p passed them.
func checkPathBytes(c *checker, p string) bool {
	switch {
	case len(p) > MaxPathBytes:
		c.fail("", RuleTooLarge, "longer than "+strconv.Itoa(MaxPathBytes)+" bytes")
	case !utf8.ValidString(p):
		c.fail("", RuleFormat, "not valid UTF-8")
	case strings.ContainsAny(p, "\x00\r\n\\"):
		c.fail("", RuleFormat, "contains NUL, CR, LF or a backslash")
	}
	return c.ok()
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
		c.fail("", RuleTooLarge, "longer than "+strconv.Itoa(MaxNameBytes)+" bytes")
	case !utf8.ValidString(name):
		c.fail("", RuleFormat, "not valid UTF-8")
	case name == "." || name == "..":
		c.fail("", RuleFormat, ". and .. are not entries")
	case strings.ContainsAny(name, "/\\\x00\r\n"):
		c.fail("", RuleFormat, "must be a single component without separators or control characters")
	}
	return c.err()
}

// hasDrivePrefix reports whether p starts with a Windows drive ("C:").
func hasDrivePrefix(p string) bool {
	return len(p) >= 2 && p[1] == ':' && (p[0] >= 'a' && p[0] <= 'z' || p[0] >= 'A' && p[0] <= 'Z')
}
