//go:build unix

package install

import (
	"io/fs"
	"syscall"
)

// fileID is a file's device and inode, so that hard links count once.
func fileID(info fs.FileInfo) ([2]uint64, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return [2]uint64{}, false
	}
	return [2]uint64{uint64(st.Dev), uint64(st.Ino)}, true //nolint:unconvert // Dev's type differs by platform
}
