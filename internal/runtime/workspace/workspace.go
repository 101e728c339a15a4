// Package workspace serves a bound local directory to workspace reads:
// byte reads of one regular file and the listing of one directory, both
// bounded, both confined to the directory with os.Root so that no path
// leaves it through "..", an absolute path or a symbolic link, whoever
// created the link and whenever (daemon-protocol.txt:185, the daemon's Go
// implementation serves every platform).
package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"syscall"

	"github.com/agentwire/agentwire/wire"
)

// MaxScannedNames bounds how many names one directory read looks at before
// it sorts them; a larger directory is listed as truncated.
//
// decision: entries are listed sorted by name, so that a truncated listing
// is the same prefix every time (daemon-protocol.txt:179 forbids
// pagination, not order); sorting needs every name, so the scan is bounded
// and the excess reported as truncation rather than read without limit.
const MaxScannedNames = 1 << 16

// Error is a safe refusal: nothing was read or written (Outcome
// "rejected"), or a read or write whose effect is not known (Outcome
// "unknown"). Code is one of the workspace_read_result or
// workspace_write_result codes of its outcome.
type Error struct {
	Outcome string
	Code    string
	// Reason refines a write_rejected refusal of a write (WriteFile), or
	// is empty.
	Reason string
	Msg    string
}

func (e *Error) Error() string { return e.Code + ": " + e.Msg }

func rejected(code, format string, args ...any) *Error {
	return &Error{Outcome: "rejected", Code: code, Msg: fmt.Sprintf(format, args...)}
}

func unconfirmed(format string, args ...any) *Error {
	return &Error{Outcome: "unknown", Code: "read_unconfirmed", Msg: fmt.Sprintf(format, args...)}
}

// Workspace is one bound directory. Its methods may run concurrently.
type Workspace struct {
	root *os.Root
}

// Open binds dir, which must be an existing directory.
func Open(dir string) (*Workspace, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return &Workspace{root: r}, nil
}

// Close releases the bound directory.
func (w *Workspace) Close() error { return w.root.Close() }

// Name is the bound directory as it was opened.
func (w *Workspace) Name() string { return w.root.Name() }

// Bytes is the result of a byte read.
type Bytes struct {
	Data      []byte
	Truncated bool // the file has more than the requested bytes
}

// ReadFile reads at most maxBytes (1 to wire.MaxReadBytes) bytes of the
// regular file at the workspace-relative path p.
func (w *Workspace) ReadFile(p string, maxBytes int64) (Bytes, error) {
	if err := wire.CheckWorkspacePath(p, false); err != nil {
		return Bytes{}, rejected("invalid_request", "path: %v", err)
	}
	if maxBytes < 1 || maxBytes > wire.MaxReadBytes {
		return Bytes{}, rejected("invalid_request", "max_bytes must be from 1 to %d", wire.MaxReadBytes)
	}
	f, err := w.open(p)
	if err != nil {
		return Bytes{}, openError(p, err, false)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return Bytes{}, rejected("resource_unavailable", "%s: cannot stat", p)
	}
	switch {
	case st.IsDir():
		_ = f.Close()
		// decision: not_directory refuses only directory reads (the wire's
		// Answers check), so a byte read of a directory is a malformed
		// request for this path.
		return Bytes{}, rejected("invalid_request", "%s is a directory; list it with operation directory", p)
	case !st.Mode().IsRegular():
		_ = f.Close()
		return Bytes{}, rejected("read_unsupported", "%s is not a regular file", p)
	}
	buf := make([]byte, min(maxBytes+1, st.Size()+1))
	n, rerr := io.ReadFull(io.LimitReader(f, maxBytes+1), buf[:cap(buf)])
	if errors.Is(rerr, io.ErrUnexpectedEOF) || errors.Is(rerr, io.EOF) {
		rerr = nil
	}
	if n == len(buf) && int64(n) <= maxBytes {
		// The file grew past its stat size: read on, up to the bound.
		more, err := io.ReadAll(io.LimitReader(f, maxBytes+1-int64(n)))
		buf, n, rerr = append(buf[:n], more...), n+len(more), err
	}
	cerr := f.Close()
	switch {
	case rerr != nil:
		// decision: bytes were being read when the error came, so the
		// outcome is ambiguous and never returned (daemon-protocol.txt:181).
		return Bytes{}, unconfirmed("%s: the read broke off", p)
	case cerr != nil:
		return Bytes{}, unconfirmed("%s: the native close failed", p)
	}
	if int64(n) > maxBytes {
		return Bytes{Data: buf[:maxBytes], Truncated: true}, nil
	}
	return Bytes{Data: buf[:n]}, nil
}

// Listing is the result of a directory read.
type Listing struct {
	Entries   []wire.WorkspaceDirectoryEntry
	Truncated bool // more entries exist than were listed
}

// ReadDir lists at most maxEntries (1 to wire.MaxDirectoryEntries) entries
// of the directory at the workspace-relative path p ("" is the root),
// sorted by name. A symbolic link is listed as such and never followed.
func (w *Workspace) ReadDir(p string, maxEntries int) (Listing, error) {
	if err := wire.CheckWorkspacePath(p, true); err != nil {
		return Listing{}, rejected("invalid_request", "path: %v", err)
	}
	if maxEntries < 1 || maxEntries > wire.MaxDirectoryEntries {
		return Listing{}, rejected("invalid_request", "max_entries must be from 1 to %d", wire.MaxDirectoryEntries)
	}
	dir := p
	if dir == "" {
		dir = "."
	}
	f, err := w.open(dir)
	if err != nil {
		return Listing{}, openError(p, err, true)
	}
	st, err := f.Stat()
	if err != nil || !st.IsDir() {
		_ = f.Close()
		if err != nil {
			return Listing{}, rejected("resource_unavailable", "%s: cannot stat", p)
		}
		return Listing{}, rejected("not_directory", "%s is not a directory", p)
	}
	names, rerr := f.Readdirnames(MaxScannedNames + 1)
	if errors.Is(rerr, io.EOF) {
		rerr = nil
	}
	out := Listing{Entries: []wire.WorkspaceDirectoryEntry{}}
	if len(names) > MaxScannedNames {
		names, out.Truncated = names[:MaxScannedNames], true
	}
	sort.Strings(names)
	for _, name := range names {
		if rerr != nil {
			break
		}
		if wire.CheckEntryName(name) != nil {
			// decision: a name the wire cannot carry (invalid UTF-8, a
			// control character) is left out and the listing marked
			// truncated, so the omission is explicit (daemon-protocol.txt:179).
			out.Truncated = true
			continue
		}
		if len(out.Entries) == maxEntries {
			out.Truncated = true
			break
		}
		// Lstat through the root: the entry itself is described, never
		// what a link points to, and no path leaves the workspace.
		fi, err := w.root.Lstat(path.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while listing
		}
		if err != nil {
			rerr = err
			break
		}
		out.Entries = append(out.Entries, entry(name, fi))
	}
	cerr := f.Close()
	switch {
	case rerr != nil:
		return Listing{}, unconfirmed("%s: the listing broke off", p)
	case cerr != nil:
		return Listing{}, unconfirmed("%s: the native close failed", p)
	}
	return out, nil
}

func entry(name string, fi fs.FileInfo) wire.WorkspaceDirectoryEntry {
	e := wire.WorkspaceDirectoryEntry{Name: name}
	switch m := fi.Mode(); {
	case m.IsRegular():
		size := fi.Size()
		e.Kind, e.SizeBytes = wire.EntryFile, &size
	case m.IsDir():
		e.Kind = wire.EntryDirectory
	case m&fs.ModeSymlink != 0:
		e.Kind = wire.EntrySymlink
	default:
		e.Kind = wire.EntryOther
	}
	return e
}

// open opens p inside the root without blocking on a FIFO or device.
// os.Root follows a symbolic link only while it stays inside the root.
func (w *Workspace) open(p string) (*os.File, error) {
	return w.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}

// openError classifies a failed open: nothing was read, so it is always a
// safe rejection.
func openError(p string, err error, directory bool) *Error {
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rejected("not_found", "%s does not exist", p)
	case errors.Is(err, syscall.ENOTDIR):
		if directory {
			return rejected("not_directory", "%s: a parent is not a directory", p)
		}
		return rejected("not_found", "%s: a parent is not a directory", p)
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.ELOOP):
		return rejected("permission_denied", "%s cannot be opened", p)
	case !errors.As(err, &errno):
		// decision: an error that is not the system's own is os.Root's
		// refusal of a path that resolves outside the workspace (through a
		// symbolic link, daemon-protocol.txt:185); the path is well formed,
		// so it is refused as permission_denied, not invalid_request.
		return rejected("permission_denied", "%s leads outside the workspace", p)
	}
	return rejected("resource_unavailable", "%s cannot be opened", p)
}
