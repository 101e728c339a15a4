package spec

import (
	"errors"
	"fmt"
	"sort"
)

// Error is one problem found in a spec file. Its message is a single line
// that starts with file:line, so editors and CI logs can jump to it.
type Error struct {
	Pos Pos
	Msg string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// errorList collects every problem of a load so that one run reports all of
// them, not just the first.
type errorList struct{ errs []*Error }

func (l *errorList) add(p Pos, format string, args ...any) {
	l.errs = append(l.errs, &Error{Pos: p, Msg: fmt.Sprintf(format, args...)})
}

func (l *errorList) empty() bool { return len(l.errs) == 0 }

// err returns the collected problems sorted by file and line and joined, or
// nil. Duplicates (the same message at the same place, which list expansion
// can produce) are reported once.
func (l *errorList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	sort.SliceStable(l.errs, func(i, j int) bool {
		a, b := l.errs[i].Pos, l.errs[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
	seen := map[string]bool{}
	var out []error
	for _, e := range l.errs {
		k := e.Error()
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, e)
	}
	return errors.Join(out...)
}
