// Package sha256sums reads and writes the SHA256SUMS files that list a
// release's files with their sha256 digests, exactly as OpenTofu 1.12
// reads them when it installs a provider from a registry, and, for
// OpenTofu's own releases, as the TofuDL client reads them.
//
// OpenTofu reads a SHA256SUMS file twice (internal/getproviders,
// package_authentication.go):
//
//   - To check the package it installs, it splits the file at "\n", splits
//     each line into whitespace-separated fields, and takes the first line
//     whose second field is exactly the package's file name; its first
//     field must hex-decode into the package's 32-byte sha256.
//   - To record the signed hashes in the lock file, it scans the lines
//     again: a line with a single field, or whose first field is not 64 hex
//     digits, makes it drop the whole file (the install then counts as
//     "verified checksum", not "signed"); an empty line crashes it.
//
// Read, File.Lookup and File.Warnings make the same decisions, with the
// line number and the reason.
package sha256sums

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Sums maps file names to lower-case hex sha256 digests, as listed in
// a release's SHA256SUMS file.
type Sums map[string]string

// File is a SHA256SUMS file as OpenTofu reads it.
type File struct {
	// lines are each line's whitespace-separated fields, split at "\n"
	// (OpenTofu's lookup); line n is lines[n-1].
	lines [][][]byte
	// first maps each name (second field) to the number of the first line
	// giving it, the line OpenTofu's lookup stops at.
	first map[string]int
	// unsigned explains why OpenTofu would not take the file's hashes as
	// signed ("" when it would).
	unsigned string
	// stopped is the line where OpenTofu's scanner gives up (0: none).
	stopped int
}

// maxScanLine is the longest line OpenTofu's bufio.Scanner reads
// (bufio.MaxScanTokenSize).
const maxScanLine = bufio.MaxScanTokenSize

// Read reads a SHA256SUMS file. It refuses only what makes OpenTofu fail
// whatever package it installs: an empty (or all-blank) line, which
// crashes OpenTofu 1.12's checksum reader. Lines that OpenTofu cannot use
// make Lookup fail for the names they give, and odd lines that OpenTofu
// puts up with are reported by Warnings.
func Read(data []byte) (*File, error) {
	f := &File{first: map[string]int{}}
	for i, line := range bytes.Split(data, []byte("\n")) {
		fields := bytes.Fields(line)
		f.lines = append(f.lines, fields)
		if len(fields) > 1 {
			if _, seen := f.first[string(fields[1])]; !seen {
				f.first[string(fields[1])] = i + 1
			}
		}
	}
	if err := f.scanAsTofu(data); err != nil {
		return nil, err
	}
	return f, nil
}

// scanAsTofu reads the file the way OpenTofu collects the signed hashes
// for the lock file, line by line with a bufio.Scanner, stopping where it
// stops.
func (f *File) scanAsTofu(data []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		fields := bytes.Fields(sc.Bytes())
		switch {
		case len(fields) == 0:
			return fmt.Errorf("SHA256SUMS line %d is empty: OpenTofu 1.12 crashes reading a SHA256SUMS with an empty line (index out of range) and installs nothing; remove the line", n)
		case len(fields) == 1:
			f.unsigned = fmt.Sprintf("line %d has a single field", n)
			return nil
		case !isSHA256Hex(fields[0]):
			f.unsigned = fmt.Sprintf("line %d starts with %q, not 64 hex digits%s", n, abbreviate(fields[0]), bomNote(fields[0]))
			return nil
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		f.stopped = n + 1
		if n == 0 {
			f.unsigned = fmt.Sprintf("line 1 is longer than %d bytes", maxScanLine)
		}
	}
	return nil
}

// RecordsHashes reports whether OpenTofu takes the file's hashes as signed:
// it then records the zh: hash of every line in lock files, and reports the
// install as "signed" rather than "verified checksum".
func (f *File) RecordsHashes() bool { return f.unsigned == "" }

// Hashes are the digests OpenTofu records as signed (lower-case hex), one
// per line in order, up to where its scanner stops; nil when it does not
// take the file's hashes as signed (RecordsHashes).
func (f *File) Hashes() []string {
	if !f.RecordsHashes() {
		return nil
	}
	var out []string
	for i, fields := range f.lines {
		if f.stopped > 0 && i+1 >= f.stopped {
			break
		}
		if len(fields) == 0 {
			continue // after the final "\n"; any other empty line was refused by Read
		}
		out = append(out, strings.ToLower(string(fields[0])))
	}
	return out
}

func isSHA256Hex(b []byte) bool {
	if len(b) != 64 {
		return false
	}
	_, err := hex.Decode(make([]byte, 32), b)
	return err == nil
}

const bom = "\ufeff"

func bomNote(field []byte) string {
	if bytes.HasPrefix(field, []byte(bom)) {
		return " (the file starts with a UTF-8 byte order mark, which OpenTofu reads as part of the digest)"
	}
	return ""
}

// abbreviate shortens a field for a message.
func abbreviate(b []byte) string {
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}

// Lookup returns the digest OpenTofu checks name against: from the first
// line whose second field is exactly name, the first field hex-decoded
// into 32 bytes (OpenTofu accepts upper-case hex; a shorter digest leaves
// the remaining bytes zero). The error says why OpenTofu would refuse the
// package: not listed (with a hint when a line lists "*name", sha256sum's
// binary-mode form), or a digest it cannot decode.
func (f *File) Lookup(name string) (string, error) {
	n, fields := f.find([]byte(name))
	if fields == nil {
		return "", f.notListed(name)
	}
	digest := fields[0]
	sum, crashed, err := decodeAsTofu(digest)
	if crashed {
		return "", fmt.Errorf("SHA256SUMS line %d: the digest of %s has more than 64 hex digits: OpenTofu 1.12 crashes reading it (index out of range)", n, name)
	}
	if err != nil {
		return "", fmt.Errorf("SHA256SUMS line %d: %q is not a hex sha256 digest, so OpenTofu refuses %s%s", n, abbreviate(digest), name, bomNote(digest))
	}
	return hex.EncodeToString(sum[:]), nil
}

// decodeAsTofu decodes a digest as OpenTofu does, with hex.Decode into 32
// bytes: upper-case hex is fine and a short digest leaves zero bytes.
// hex.Decode writes each pair of digits once both are valid, so a 33rd
// valid pair overflows the array: OpenTofu then crashes (crashed). Any
// other digest longer than 64 characters is an error.
func decodeAsTofu(digest []byte) (sum [32]byte, crashed bool, err error) {
	if len(digest) <= 2*len(sum) {
		_, err = hex.Decode(sum[:], digest)
		return sum, false, err
	}
	if len(digest) >= 2*len(sum)+2 && isHexDigits(digest[:2*len(sum)+2]) {
		return sum, true, nil
	}
	return sum, false, fmt.Errorf("%d characters where a sha256 digest has 64", len(digest))
}

func isHexDigits(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// find returns the first line whose second field is name, and its number.
func (f *File) find(name []byte) (int, [][]byte) {
	n, ok := f.first[string(name)]
	if !ok {
		return 0, nil
	}
	return n, f.lines[n-1]
}

func (f *File) notListed(name string) error {
	if n, _ := f.find([]byte("*" + name)); n > 0 {
		return fmt.Errorf("SHA256SUMS line %d lists *%s, with sha256sum's binary-mode marker: OpenTofu compares names exactly, finds no entry for %s and refuses it; write \"<sha256>  %s\" (two spaces, no '*')", n, name, name, name)
	}
	return fmt.Errorf("SHA256SUMS does not list %s", name)
}

// Sums returns every name a line lists with the digest Lookup gives for it
// (names whose digest OpenTofu cannot decode are left out).
func (f *File) Sums() Sums {
	sums := Sums{}
	for name := range f.first {
		if sum, err := f.Lookup(name); err == nil {
			sums[name] = sum
		}
	}
	return sums
}

// Warnings describe what OpenTofu puts up with but handles differently
// from a well-formed file: a line that makes it drop the file's hashes from
// lock files, a name listed again with another digest, a line too long for
// its scanner.
func (f *File) Warnings() []string {
	var w []string
	if f.unsigned != "" {
		w = append(w, fmt.Sprintf("SHA256SUMS %s: OpenTofu then takes none of its hashes as signed: it installs packages as \"verified checksum\" (or \"signature validation was skipped\", from a registry that lists package hashes) instead of \"signed\", and records only the hashes it verifies itself in lock files", f.unsigned))
	}
	if f.stopped > 1 {
		w = append(w, fmt.Sprintf("SHA256SUMS line %d is longer than %d bytes: OpenTofu stops reading there and records none of the later hashes in lock files", f.stopped, maxScanLine))
	}
	return append(w, f.conflicts()...)
}

// maxConflicts bounds the conflicting lines reported one by one.
const maxConflicts = 5

// conflicts reports names listed again with another digest (the first
// few, then how many more).
func (f *File) conflicts() []string {
	var w []string
	more := 0
	for i, fields := range f.lines {
		if len(fields) < 2 {
			continue
		}
		n := f.first[string(fields[1])]
		if n == i+1 || bytes.EqualFold(fields[0], f.lines[n-1][0]) {
			continue
		}
		if len(w) == maxConflicts {
			more++
			continue
		}
		w = append(w, fmt.Sprintf("SHA256SUMS line %d lists %s again with another digest: OpenTofu checks the package against line %d and ignores this one, but records both digests in lock files", i+1, abbreviate(fields[1]), n))
	}
	if more > 0 {
		w = append(w, fmt.Sprintf("SHA256SUMS lists %d more names again with other digests", more))
	}
	return w
}

// Parse reads a SHA256SUMS file (Read) and returns what it lists (Sums);
// a file that lists nothing is an error.
func Parse(data []byte) (Sums, error) {
	f, err := Read(data)
	if err != nil {
		return nil, err
	}
	sums := f.Sums()
	if len(sums) == 0 {
		return nil, fmt.Errorf("SHA256SUMS lists no files")
	}
	return sums, nil
}

// Bytes renders sums in the canonical sha256sum format, sorted by name:
// the form the Provider Registry Protocol's clients parse.
func (s Sums) Bytes() []byte {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", s[n], n)
	}
	return b.Bytes()
}

// TofuDLDigests returns the digests the TofuDL client (github.com/opentofu/
// tofudl, the reference client for OpenTofu's own releases) checks the
// file name against: every line that, trimmed, ends in two spaces and the
// name gives the text before its first space. The client wants at least
// one, and each must equal the file's lower-case hex sha256 exactly (it
// compares strings: upper-case hex, a tab or "*name" do not match).
func TofuDLDigests(data []byte, name string) []string {
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasSuffix(line, "  "+name) {
			out = append(out, strings.Split(line, " ")[0])
		}
	}
	return out
}
