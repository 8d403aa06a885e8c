// Package servercreds reads and makes the credentials `oci-tofu serve`
// holds itself: its TLS certificate and key (read from files, or
// self-signed for trials), the bearer tokens clients must present, and the
// key archive URLs are signed with. Every file is read only when it is a
// regular file of bounded size, so a FIFO or a device never blocks
// start-up. It names no command-line flag: callers say which of theirs a
// FileError is about.
package servercreds
