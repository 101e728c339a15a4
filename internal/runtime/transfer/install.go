package transfer

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/agentwire/agentwire/wire"
)

// WorkspacePath turns a runtime_prepare file path (logical, under
// /workspace/) into a path relative to the bound workspace, or reports why
// it cannot be one.
func WorkspacePath(logical string) (string, error) {
	if err := wire.CheckLogicalPath(logical, false); err != nil {
		return "", rejected("invalid_request", "file.path: %v", err)
	}
	rel := strings.TrimPrefix(logical, "/workspace/")
	if err := wire.CheckWorkspacePath(rel, false); err != nil {
		return "", rejected("invalid_request", "file.path: %v", err)
	}
	return rel, nil
}

// InstallFile installs the staged body as the file rel inside root: it is
// copied to a temporary file next to the target and renamed over it, so a
// reader sees the old file or the whole new one, never a part. Parent
// directories are created. Every path goes through root, so a symbolic
// link (one the agent made during a Turn included) cannot lead the write
// out of the workspace.
func InstallFile(root *os.Root, rel string, s *Staged) error {
	src, err := s.body()
	if err != nil {
		return err
	}
	defer src.Close()
	if dir := path.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return installError(rel, err)
		}
	}
	if fi, err := root.Lstat(rel); err == nil && fi.IsDir() {
		return failed("%s is a directory", rel)
	}
	tmp := path.Join(path.Dir(rel), ".agentwire-install-"+randomHex())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return installError(rel, err)
	}
	_, err = io.Copy(f, src)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		_ = root.Remove(tmp)
		// The rename is the only step that touches rel, and it is atomic:
		// whatever failed, rel is unchanged.
		return failed("installing %s: %v", rel, errors.Unwrap(err))
	}
	return nil
}

// installError classifies a failure before any byte reached the target:
// a path os.Root refuses (it resolves outside the workspace) or that the
// system denies is a rejection; anything else is a definite failure.
func installError(rel string, err error) error {
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrPermission):
		return rejected("runtime_preparation_rejected", "%s cannot be written", rel)
	case !errors.As(err, &errno):
		// decision: an error that is not the system's own is os.Root's
		// refusal of a path leading outside the workspace
		// (daemon-protocol.txt:185); nothing was written, so the commit is
		// rejected rather than failed.
		return rejected("runtime_preparation_rejected", "%s leads outside the workspace", rel)
	}
	return failed("%s: %v", rel, errno)
}

// Bundle kinds and where they are installed in the area's capabilities.
const (
	KindSkill  = "skills"
	KindPlugin = "plugins"
)

// BundleName checks a skill name or plugin slot as a single path element
// of the capabilities directory.
func BundleName(name string) error {
	if err := wire.CheckEntryName(name); err != nil || name == "." || name == ".." || strings.HasPrefix(name, ".") {
		return rejected("invalid_request", "%q cannot name an installed bundle", bounded(name))
	}
	return nil
}

// InstallBundle extracts the staged archive and installs it as
// capabilities/<kind>/<name>, replacing an earlier bundle of that name in
// one rename: the extraction runs in the transfer's staging, so a refused
// or broken archive leaves the installed one untouched.
func (a *Area) InstallBundle(kind, name string, s *Staged) error {
	if kind != KindSkill && kind != KindPlugin {
		return fmt.Errorf("transfer: unknown bundle kind %q", kind)
	}
	if err := BundleName(name); err != nil {
		return err
	}
	src, err := s.body()
	if err != nil {
		return err
	}
	defer src.Close()
	tree, err := s.scratch("tree")
	if err != nil {
		return err
	}
	if err := Extract(src, tree); err != nil {
		return err
	}
	target := filepath.Join(a.caps, kind, name)
	old := ""
	if _, err := os.Lstat(target); err == nil {
		old = filepath.Join(filepath.Dir(tree), "old")
		if err := os.Rename(target, old); err != nil {
			return failed("moving the installed %s aside: %v", name, errors.Unwrap(err))
		}
	}
	if err := os.Rename(tree, target); err != nil {
		if old != "" {
			if rerr := os.Rename(old, target); rerr != nil {
				// Neither bundle is in place and the old one could not be
				// put back: the outcome is not a definite failure.
				return fmt.Errorf("transfer: installing %s and restoring the old bundle both failed: %w", name, rerr)
			}
		}
		return failed("installing %s: %v", name, errors.Unwrap(err))
	}
	return nil
}

func randomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
