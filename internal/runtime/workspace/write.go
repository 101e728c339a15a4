package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/agentwire/agentwire/wire"
)

// The installer of workspace_write: a verified body becomes the regular
// file at a workspace-relative path, all at once or not at all.
//
// decision: the body is written to a temporary file in the destination's
// own directory and renamed over the destination, so a reader (or a crash)
// sees the old file or the new one, never a mix; the protocol allows no
// staging directory (daemon-protocol.txt:185), and a rename within one
// directory cannot cross a file system. An existing regular file is
// replaced, missing parent directories are created.
//
// decision: a write is stricter than a read about symbolic links. A read
// follows a link that stays inside the workspace; a write refuses any link
// on its way (a parent or the destination) with unsafe_destination, so a
// file never lands somewhere else than the path Core named. Each parent is
// opened as its own os.Root, one component at a time, and checked to be
// the directory that was looked at, so a link swapped in meanwhile is
// caught; os.Root keeps every step inside the workspace whatever happens.

// WriteError reasons: Error.Reason refines a write_rejected refusal.
const (
	reasonDirectory = wire.WriteReasonDirectory
	reasonUnsafe    = wire.WriteReasonUnsafe
)

// testHookBeforeRename, when set (tests only), runs after the body is
// written and synced to the temporary file and before the rename; an error
// fails the write there, as a failed native call would.
var testHookBeforeRename func() error

// TempPrefix starts the name of every temporary file the installer makes;
// a leftover one (after a crash) can be recognised by it.
const TempPrefix = ".agentwire-write-"

func writeRejected(reason, format string, args ...any) *Error {
	e := rejected("write_rejected", format, args...)
	e.Reason = reason
	return e
}

// WriteFile installs the concatenation of data as the regular file at the
// workspace-relative path p (a body received in chunks is installed
// without first being copied into one slice). On a rejection (*Error with Outcome "rejected") the destination
// is unchanged; an *Error with Outcome "unknown" (write_unconfirmed) means
// the file was renamed into place but its directory could not be synced,
// so whether it survives a crash is not known.
func (w *Workspace) WriteFile(p string, data ...[]byte) error {
	if err := wire.CheckWorkspacePath(p, false); err != nil {
		return rejected("invalid_request", "path: %v", err)
	}
	size := 0
	for _, d := range data {
		size += len(d)
	}
	if int64(size) > wire.MaxTransferBytes {
		return rejected("invalid_request", "the body is over %d bytes", wire.MaxTransferBytes)
	}
	dir, base := path.Split(p)
	parent, err := w.openParent(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return err
	}
	defer parent.Close()
	if err := checkDestination(parent, p, base); err != nil {
		return err
	}
	tmp, err := writeTemp(parent, data)
	if err != nil {
		return err
	}
	if testHookBeforeRename != nil {
		if err := testHookBeforeRename(); err != nil {
			_ = parent.Remove(tmp)
			return writeRejected("", "%s: %v", p, err)
		}
	}
	// The parent may have been moved or replaced while the body was
	// written: install only into the directory that is still at dir.
	if err := w.stillAt(strings.TrimSuffix(dir, "/"), parent); err != nil {
		_ = parent.Remove(tmp)
		return err
	}
	if err := parent.Rename(tmp, base); err != nil {
		_ = parent.Remove(tmp)
		if fi, lerr := parent.Lstat(base); lerr == nil && fi.IsDir() {
			return writeRejected(reasonDirectory, "%s is a directory", p)
		}
		return writeRejected("", "%s could not be installed", p)
	}
	d, err := parent.Open(".")
	if err == nil {
		err = errors.Join(d.Sync(), d.Close())
	}
	if err != nil {
		return &Error{Outcome: "unknown", Code: "write_unconfirmed", Msg: p + ": installed, but its directory could not be synced"}
	}
	return nil
}

// openParent opens the directory dir ("" is the workspace itself) as a
// Root, creating missing components and refusing any that is a symbolic
// link or not a directory.
func (w *Workspace) openParent(dir string) (*os.Root, error) {
	cur, err := w.root.OpenRoot(".")
	if err != nil {
		return nil, rejected("resource_unavailable", "the workspace cannot be opened")
	}
	if dir == "" {
		return cur, nil
	}
	for _, c := range strings.Split(dir, "/") {
		next, err := openChild(cur, c, dir)
		_ = cur.Close()
		if err != nil {
			return nil, err
		}
		cur = next
	}
	return cur, nil
}

// openChild opens the directory c of cur, creating it when missing, and
// checks that what it opened is what Lstat saw: a real directory, not a
// link.
func openChild(cur *os.Root, c, dir string) (*os.Root, error) {
	fi, err := cur.Lstat(c)
	if errors.Is(err, fs.ErrNotExist) {
		if err = cur.Mkdir(c, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, writeRejected("", "%s: a parent directory cannot be created", dir)
		}
		fi, err = cur.Lstat(c)
	}
	switch {
	case err != nil:
		return nil, writeRejected("", "%s: a parent cannot be examined", dir)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, writeRejected(reasonUnsafe, "%s: a parent is a symbolic link", dir)
	case !fi.IsDir():
		return nil, writeRejected("", "%s: a parent is not a directory", dir)
	}
	next, err := cur.OpenRoot(c)
	if err != nil {
		return nil, writeRejected(reasonUnsafe, "%s: a parent cannot be opened inside the workspace", dir)
	}
	if st, err := next.Stat("."); err != nil || !os.SameFile(fi, st) {
		_ = next.Close()
		return nil, writeRejected(reasonUnsafe, "%s: a parent changed while it was opened", dir)
	}
	return next, nil
}

// stillAt checks that the directory at dir, reached without following a
// link, is the one parent holds open.
func (w *Workspace) stillAt(dir string, parent *os.Root) error {
	st, err := parent.Stat(".")
	if err != nil {
		return writeRejected(reasonUnsafe, "%s: the parent is gone", dir)
	}
	name := "."
	if dir != "" {
		parts := strings.Split(dir, "/")
		for i := range parts {
			name = strings.Join(parts[:i+1], "/")
			fi, err := w.root.Lstat(name)
			if err != nil || fi.Mode()&fs.ModeSymlink != 0 || !fi.IsDir() {
				return writeRejected(reasonUnsafe, "%s: a parent was replaced during the write", dir)
			}
		}
	}
	fi, err := w.root.Lstat(name)
	if err != nil || !os.SameFile(fi, st) {
		return writeRejected(reasonUnsafe, "%s: the parent was moved during the write", dir)
	}
	return nil
}

// checkDestination refuses a destination that exists and is not a regular
// file: a directory, a symbolic link (never written through) or a special
// file.
func checkDestination(parent *os.Root, p, base string) error {
	fi, err := parent.Lstat(base)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return writeRejected("", "%s cannot be examined", p)
	case fi.IsDir():
		return writeRejected(reasonDirectory, "%s is a directory", p)
	case fi.Mode()&fs.ModeSymlink != 0:
		return writeRejected(reasonUnsafe, "%s is a symbolic link", p)
	case !fi.Mode().IsRegular():
		return writeRejected(reasonUnsafe, "%s is not a regular file", p)
	}
	return nil
}

// writeTemp writes data to a new temporary file in parent, synced and
// closed, and returns its name; on failure nothing is left behind.
func writeTemp(parent *os.Root, data [][]byte) (string, error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := TempPrefix + hex.EncodeToString(b[:])
	// O_EXCL: the name is new, so no link or file of that name is
	// followed or reused.
	f, err := parent.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return "", writeRejected("", "a temporary file cannot be created")
	}
	for _, d := range data {
		if _, err = f.Write(d); err != nil {
			break
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = parent.Remove(name)
		return "", writeRejected("", "the body could not be written")
	}
	return name, nil
}
