package transfer

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"unicode/utf8"
)

// Bounds of one extracted bundle. The body itself is at most 50 MiB
// (wire.MaxTransferBytes); these bound what it may expand to.
//
// decision: the protocol text fixes no expansion bound (daemon-protocol.txt:104
// bounds the transfer, not its content); a bundle may expand to four times
// the transfer bound in at most 10 000 entries, which keeps a compressed
// "bomb" from filling the state directory.
const (
	MaxExtractedBytes   = 200 << 20
	MaxArchiveEntries   = 10_000
	maxArchivePathBytes = 4096
)

// Extract unpacks the tar archive r (gzip-compressed or not; the gzip
// magic decides) into the existing directory dir, which must be empty.
//
// decision: the wire reference names no bundle format for skills and
// plugins; the export archive it bounds (528 MiB = 500 MiB of files plus
// headers) is a tar, so bundles are tar too, gzip optional, read with the
// standard library only.
//
// Every entry is checked before anything is written for it: the name is a
// clean relative UTF-8 path without "..", a leading "/", a backslash or a
// NUL; only directories and regular files are accepted (links of any kind,
// devices and FIFOs are refused rather than resolved, so no entry can point
// out of dir); names do not repeat; sizes and counts stay within the
// bounds above. The files are created through an os.Root on dir, so even a
// path the checks missed cannot leave it. An error leaves a partial tree in
// dir for the caller to remove.
func Extract(r io.Reader, dir string) error {
	br := bufio.NewReader(r)
	var src io.Reader = br
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return rejected("invalid_request", "the bundle's gzip header is invalid")
		}
		defer gz.Close()
		gz.Multistream(false)
		src = gz
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(src)
	seen := map[string]bool{}
	var total int64
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if n == 0 {
				return rejected("invalid_request", "the bundle is an empty archive")
			}
			return nil
		}
		if err != nil {
			return rejected("invalid_request", "the bundle is not a valid tar archive")
		}
		if n >= MaxArchiveEntries {
			return rejected("invalid_request", "the bundle has more than %d entries", MaxArchiveEntries)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue // metadata only; no file
		}
		name, err := entryName(h.Name)
		if err != nil {
			return err
		}
		if seen[name] {
			return rejected("invalid_request", "entry %q appears twice", bounded(name))
		}
		seen[name] = true
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return rejected("invalid_request", "entry %q: %v", bounded(name), errors.Unwrap(err))
			}
		case tar.TypeReg:
			if h.Size < 0 || total+h.Size > MaxExtractedBytes {
				return rejected("invalid_request", "the bundle expands past %d bytes", MaxExtractedBytes)
			}
			total += h.Size
			if err := writeEntry(root, name, h, tr); err != nil {
				return err
			}
		default:
			return rejected("invalid_request", "entry %q is a %s; bundles hold only files and directories", bounded(name), kindOf(h.Typeflag))
		}
	}
}

// entryName checks an archive entry's name and returns it cleaned of a
// leading "./" and a trailing "/".
func entryName(raw string) (string, error) {
	name := strings.TrimSuffix(strings.TrimPrefix(raw, "./"), "/")
	switch {
	case name == "" || name == ".":
		return "", rejected("invalid_request", "an entry has an empty name")
	case len(name) > maxArchivePathBytes || !utf8.ValidString(name):
		return "", rejected("invalid_request", "an entry name is too long or not UTF-8")
	case strings.HasPrefix(name, "/"):
		return "", rejected("invalid_request", "entry %q is absolute", bounded(name))
	case strings.ContainsAny(name, "\\\x00"):
		return "", rejected("invalid_request", "entry %q contains a backslash or NUL", bounded(name))
	case path.Clean(name) != name:
		return "", rejected("invalid_request", "entry %q is not a clean path", bounded(name))
	case name == ".." || strings.HasPrefix(name, "../"):
		return "", rejected("invalid_request", "entry %q leaves the bundle", bounded(name))
	}
	return name, nil
}

func writeEntry(root *os.Root, name string, h *tar.Header, body io.Reader) error {
	if dir := path.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return rejected("invalid_request", "entry %q: %v", bounded(name), errors.Unwrap(err))
		}
	}
	mode := fs.FileMode(0o644)
	if h.Mode&0o111 != 0 {
		mode = 0o755
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return rejected("invalid_request", "entry %q cannot be created: %v", bounded(name), errors.Unwrap(err))
	}
	n, err := io.Copy(f, io.LimitReader(body, h.Size))
	cerr := f.Close()
	switch {
	case err != nil || n != h.Size:
		return rejected("invalid_request", "entry %q is truncated", bounded(name))
	case cerr != nil:
		return cerr
	}
	return nil
}

func kindOf(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symbolic link"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar, tar.TypeBlock:
		return "device"
	case tar.TypeFifo:
		return "FIFO"
	}
	return fmt.Sprintf("entry of type %q", t)
}

func bounded(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
