// Package jsonl is the line discipline the CLI adapters share: one JSON
// value per newline-terminated line over a child process's pipes, lines
// bounded on the way in, writes bounded by their context on the way out.
// What the lines mean (JSON-RPC for Codex, stream-json for Claude Code)
// is each adapter's.
package jsonl

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// ErrLineTooLong: the peer wrote a line longer than the bound.
var ErrLineTooLong = errors.New("jsonl: a line is longer than the bound")

// ErrBrokenWrite: an earlier write stopped part-way, so the stream no
// longer has line boundaries the peer can trust.
var ErrBrokenWrite = errors.New("jsonl: an earlier write stopped part-way; the stream is unusable")

// ReadLine reads one newline-terminated line of at most max bytes (a last
// line without its newline too).
func ReadLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > max+1 {
			return nil, ErrLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err != nil && len(line) > 0 && err == io.EOF:
			return line, nil
		case err != nil:
			return nil, err
		}
		return line, nil
	}
}

// DeadlineWriter is a child's stdin: a pipe that honours write deadlines,
// so that a write never blocks past its context.
type DeadlineWriter interface {
	io.WriteCloser
	SetWriteDeadline(time.Time) error
}

// Writer writes whole lines, one at a time.
type Writer struct {
	w      DeadlineWriter
	closed error // what a write after Close returns

	mu     sync.Mutex
	broken error
}

// NewWriter writes to w; after Close, writes return closed.
func NewWriter(w DeadlineWriter, closed error) *Writer {
	return &Writer{w: w, closed: closed}
}

// WriteLine writes line and a newline within ctx's deadline. A write that
// stops part-way breaks the stream for every later write.
func (w *Writer) WriteLine(ctx context.Context, line []byte) error {
	b := append(line[:len(line):len(line)], '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken != nil {
		return w.broken
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = w.w.SetWriteDeadline(dl)
	} else {
		_ = w.w.SetWriteDeadline(time.Time{})
	}
	stop := context.AfterFunc(ctx, func() { _ = w.w.SetWriteDeadline(time.Unix(1, 0)) })
	n, err := w.w.Write(b)
	stop()
	if err != nil {
		if n > 0 {
			w.broken = ErrBrokenWrite
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return err
	}
	return nil
}

// Broken reports whether a write stopped part-way or the writer was
// closed: whatever was being written may have reached the peer.
func (w *Writer) Broken() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.broken != nil
}

// Close closes the pipe (EOF asks the child to exit); later writes fail.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken == nil {
		w.broken = w.closed
	}
	return w.w.Close()
}
