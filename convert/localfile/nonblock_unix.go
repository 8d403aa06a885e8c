//go:build unix

package localfile

import "syscall"

// nonBlocking opens without waiting for a FIFO's writer, should a regular
// file be replaced by one between the check and the open.
const nonBlocking = syscall.O_NONBLOCK
