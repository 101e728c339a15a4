package workspace

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/agentwire/agentwire/wire"
)

// The output export of workspace_export: a tar archive of the workspace's
// outputs directory, produced as a stream.
//
// decision: the protocol names output export without saying what it
// holds (daemon-protocol.txt:185); as the reference Runtime does, it is
// the directory "outputs" of the workspace, as a tar archive (an empty
// archive when there is none), bounded per file, in total, in entries and
// in depth so that the archive stays within wire.MaxExportBytes.
//
// decision: entries are described, never followed: a symbolic link is
// archived as a link (its target text only, and only a relative one that
// stays inside outputs), so nothing outside the workspace is read; a file or directory is opened
// through os.Root and checked to be the entry that was listed. Ownership is
// not archived (meaningless on another machine) and modes are reduced to
// 0644/0755, so the archive depends only on names, contents, kinds and
// modification times (of files and directories). A special file (device, socket, FIFO) fails the
// export rather than being left out silently.
const (
	ExportDir           = "outputs"
	ExportMaxFileBytes  = 200 << 20
	ExportMaxTotalBytes = 500 << 20
	ExportMaxEntries    = 4096
	ExportMaxDepth      = 64
)

// ExportOutputs writes the archive of the outputs directory to out. It
// stops with ctx's error when ctx ends. An error means the archive is
// incomplete.
func (w *Workspace) ExportOutputs(ctx context.Context, out io.Writer) error {
	x := &exporter{ctx: ctx, root: w.root, tw: tar.NewWriter(&boundedWriter{w: out, left: wire.MaxExportBytes})}
	fi, err := w.root.Lstat(ExportDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return x.tw.Close()
	case err != nil:
		return fmt.Errorf("workspace: %s cannot be examined", ExportDir)
	case !fi.IsDir():
		// A link named outputs is not followed, wherever it points.
		return fmt.Errorf("workspace: %s is not a directory", ExportDir)
	}
	if err := x.dir(ExportDir, fi, 0); err != nil {
		return err
	}
	return x.tw.Close()
}

type exporter struct {
	ctx     context.Context
	root    *os.Root
	tw      *tar.Writer
	entries int
	bytes   int64
}

func (x *exporter) header(name string, fi fs.FileInfo) *tar.Header {
	// The format is left to the writer: USTAR when the entry fits it (the
	// same bytes as always), PAX records for a non-ASCII or long name or
	// link target, which USTAR cannot hold.
	h := &tar.Header{Name: name, ModTime: fi.ModTime().UTC().Truncate(time.Second), Mode: 0o644}
	if fi.Mode()&0o111 != 0 {
		h.Mode = 0o755
	}
	return h
}

func (x *exporter) count() error {
	if err := x.ctx.Err(); err != nil {
		return err
	}
	x.entries++
	if x.entries > ExportMaxEntries {
		return fmt.Errorf("workspace: %s holds more than %d entries", ExportDir, ExportMaxEntries)
	}
	return nil
}

// dir archives the directory p (listed as fi) and everything under it,
// sorted by name.
func (x *exporter) dir(p string, fi fs.FileInfo, depth int) error {
	if depth > ExportMaxDepth {
		return fmt.Errorf("workspace: %s is nested deeper than %d", ExportDir, ExportMaxDepth)
	}
	if err := x.count(); err != nil {
		return err
	}
	h := x.header(p+"/", fi)
	h.Typeflag, h.Mode = tar.TypeDir, 0o755
	if err := x.tw.WriteHeader(h); err != nil {
		return err
	}
	f, err := x.root.Open(p)
	if err != nil {
		return fmt.Errorf("workspace: %s cannot be opened", p)
	}
	names, rerr := f.Readdirnames(ExportMaxEntries + 1)
	st, serr := f.Stat()
	_ = f.Close()
	if (rerr != nil && !errors.Is(rerr, io.EOF)) || serr != nil || !os.SameFile(fi, st) {
		return fmt.Errorf("workspace: %s changed or could not be listed", p)
	}
	sort.Strings(names)
	for _, name := range names {
		child := path.Join(p, name)
		cfi, err := x.root.Lstat(child)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while exporting
		}
		if err != nil {
			return fmt.Errorf("workspace: %s cannot be examined", child)
		}
		switch m := cfi.Mode(); {
		case m.IsDir():
			err = x.dir(child, cfi, depth+1)
		case m.IsRegular():
			err = x.file(child, cfi)
		case m&fs.ModeSymlink != 0:
			err = x.link(child, cfi)
		default:
			err = fmt.Errorf("workspace: %s is a special file", child)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (x *exporter) link(p string, fi fs.FileInfo) error {
	if err := x.count(); err != nil {
		return err
	}
	target, err := x.root.Readlink(p)
	if err != nil {
		return fmt.Errorf("workspace: %s cannot be read", p)
	}
	// decision: a link is exported only as a relative link that stays
	// inside outputs/: one with an absolute target or one that climbs out
	// would, unpacked elsewhere, point at whatever that machine has there.
	// Such a link fails the export, naming it, rather than being dropped
	// silently (the archive is the outputs whole or not at all).
	if path.IsAbs(target) {
		return fmt.Errorf("workspace: %s is a link to an absolute path; only relative links inside %s are exported", p, ExportDir)
	}
	if to := path.Join(path.Dir(p), target); to != ExportDir && !strings.HasPrefix(to, ExportDir+"/") {
		return fmt.Errorf("workspace: %s links outside %s; only relative links inside it are exported", p, ExportDir)
	}
	h := x.header(p, fi)
	// A link's own time says nothing about what it names.
	h.Typeflag, h.Linkname, h.Mode, h.ModTime = tar.TypeSymlink, target, 0o777, time.Unix(0, 0)
	return x.tw.WriteHeader(h)
}

func (x *exporter) file(p string, fi fs.FileInfo) error {
	if err := x.count(); err != nil {
		return err
	}
	size := fi.Size()
	if size > ExportMaxFileBytes || x.bytes+size > ExportMaxTotalBytes {
		return fmt.Errorf("workspace: %s is over the export bounds", p)
	}
	f, err := x.root.Open(p)
	if err != nil {
		return fmt.Errorf("workspace: %s cannot be opened", p)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !os.SameFile(fi, st) {
		return fmt.Errorf("workspace: %s changed while exporting", p)
	}
	h := x.header(p, fi)
	h.Typeflag, h.Size = tar.TypeReg, size
	if err := x.tw.WriteHeader(h); err != nil {
		return err
	}
	// Exactly the listed size: a file that shrank fails the export, one
	// that grew is archived as it was listed.
	if _, err := io.CopyN(x.tw, ctxReader{x.ctx, f}, size); err != nil {
		return fmt.Errorf("workspace: %s could not be read whole", p)
	}
	x.bytes += size
	return nil
}

// ctxReader stops a copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(b []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(b)
}

// boundedWriter refuses to write past left bytes.
type boundedWriter struct {
	w    io.Writer
	left int64
}

func (b *boundedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > b.left {
		return 0, fmt.Errorf("workspace: the export is over %d bytes", wire.MaxExportBytes)
	}
	n, err := b.w.Write(p)
	b.left -= int64(n)
	return n, err
}
