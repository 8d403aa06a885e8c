//go:build !linux && !darwin && !freebsd && !netbsd

package modulepkg

import "io/fs"

// stampOf reads size and modification time. Without a change time and an
// inode a file's stamp is not trusted (ok is false), so files are always
// hashed.
func stampOf(fi fs.FileInfo) fileStamp {
	return fileStamp{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
}
