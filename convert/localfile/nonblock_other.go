//go:build !unix

package localfile

const nonBlocking = 0
