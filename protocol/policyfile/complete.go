package policyfile

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
)

// A reload must never open the gate on a file caught while it is being
// written: an in-place rewrite truncates the file first, and an empty
// file, or one cut between two blocks, parses. Two defences:
//
//   - stableRead reads the file only once it is still: two reads settle
//     apart must agree on the bytes, the size and the modification time.
//     A writer that pauses longer than settle in the middle of the file
//     can still be caught: write the file atomically (a temporary file
//     renamed over it), as editors and Kubernetes do (docs/policy.md).
//   - checkComplete refuses, on reload, what a cut file looks like when
//     the cut widens the policy: a file with no rules that does not write
//     its default out (an empty or truncated file, not "allow
//     everything"), and a file that does not write its default out while
//     the policy in force denies by default (the cut took the default =
//     "deny" line with it). A policy meant to allow everything says
//     default = "allow"; one that drops default = "deny" says
//     default = "allow" as well.
//
// Open, at start-up, keeps taking every valid file as it is: there is no
// policy in force yet to widen, and serve does not start on a broken file.

// maxSettleRounds bounds how long stableRead waits for a file that keeps
// changing: about 5 s at settle (100 ms) a round.
const maxSettleRounds = 50

// stableRead reads the file once two reads settle apart agree on its
// content, size and modification time.
func stableRead(path string) ([]byte, error) {
	prev, prevInfo, err := readWithInfo(path)
	if err != nil {
		return nil, err
	}
	for range maxSettleRounds {
		time.Sleep(settle)
		cur, info, err := readWithInfo(path)
		if err != nil {
			return nil, err
		}
		if bytes.Equal(cur, prev) && sameFileState(info, prevInfo) {
			return cur, nil
		}
		prev, prevInfo = cur, info
	}
	return nil, fmt.Errorf("reading the policy: %s kept changing for %s; it is read once it is still (write it atomically: a temporary file renamed over it)", path, maxSettleRounds*settle)
}

// readWithInfo reads the file (read's bounds and checks) and what the
// file system says of its size and modification time before the read.
func readWithInfo(path string) ([]byte, os.FileInfo, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the policy: %w", err)
	}
	src, err := read(path)
	if err != nil {
		return nil, nil, err
	}
	return src, info, nil
}

// sameFileState says whether two stats of the file agree on its size and
// modification time.
func sameFileState(a, b os.FileInfo) bool {
	return a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// checkComplete refuses a reloaded policy next that could be a file cut
// short and would widen the policy in force (inForce; nil: none).
func checkComplete(path string, inForce, next *policy.Policy) error {
	if next.DefaultWritten() {
		return nil
	}
	if next.Rules() == 0 {
		return fmt.Errorf("%s: the file has no rules and does not write its default out: an empty or truncated file is taken for one being written, not for \"allow everything\" (write default = \"allow\" to mean that)", path)
	}
	if inForce.DenyByDefault() {
		return fmt.Errorf("%s: the policy in force has default = \"deny\" and the file does not write its default out, which would make it \"allow\" (a file cut short loses its default line): write default = \"deny\", or default = \"allow\" to mean it", path)
	}
	return nil
}
