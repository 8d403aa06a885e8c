//go:build darwin || freebsd || netbsd

package modulepkg

import (
	"io/fs"
	"syscall"
)

// stampOf reads size, times and inode; the change time and inode come from
// the platform's stat structure.
func stampOf(fi fs.FileInfo) fileStamp {
	st := fileStamp{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.Ino, st.Ctime, st.ok = uint64(sys.Ino), sys.Ctimespec.Nano(), true
	}
	return st
}
