//go:build unix

package servercreds

import (
	"io/fs"
	"syscall"
)

// devIno is the device and inode of a file: a file replaced by rename
// or a swapped symbolic link has new ones even with the same size and
// modification time.
func devIno(fi fs.FileInfo) (uint64, uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}
