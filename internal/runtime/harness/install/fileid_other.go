//go:build !unix

package install

import "io/fs"

func fileID(fs.FileInfo) ([2]uint64, bool) { return [2]uint64{}, false }
