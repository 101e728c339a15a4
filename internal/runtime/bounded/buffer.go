// Package bounded holds what a native process writes, up to a bound: the
// adapters keep a Harness's stderr for their logs and errors without letting
// a chatty or hostile process grow the daemon's memory.
package bounded

import (
	"strings"
	"sync"
)

// Buffer keeps the first Max bytes written to it and says whether more
// came. It is safe for concurrent use (a process's output is copied on its
// own goroutine).
type Buffer struct {
	Max int

	mu        sync.Mutex
	buf       []byte
	truncated bool
}

// Write keeps what fits and drops the rest; it never fails, so the writer
// (an exec.Cmd's copier) never stops the process over its stderr.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	room := b.Max - len(b.buf)
	if room < len(p) {
		b.truncated = true
		if room > 0 {
			b.buf = append(b.buf, p[:room]...)
		}
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// String is what was kept, without its trailing newlines (it goes into a
// log line or an error), marked when more was dropped.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := strings.TrimRight(string(b.buf), "\n")
	if b.truncated {
		s += " …(truncated)"
	}
	return s
}
