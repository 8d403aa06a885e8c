// Package sha256sums reads and writes the SHA256SUMS files that list a
// release's files with their sha256 digests, as sha256sum writes them and
// OpenTofu reads them.
package sha256sums

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// Sums maps file names to lower-case hex sha256 digests, as listed in
// a release's SHA256SUMS file.
type Sums map[string]string

// Parse reads "<hex>  <name>" lines as sha256sum writes them. It
// tolerates CRLF line ends, blank lines, runs of spaces or tabs, and the
// binary-mode marker ("<hex> *<name>"). A name listed twice with the same
// digest is accepted; with different digests it is an error.
func Parse(data []byte) (Sums, error) {
	sums := Sums{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		i := strings.IndexAny(line, " \t")
		ok := i > 0
		var sum, name string
		if ok {
			sum, name = line[:i], strings.TrimLeft(line[i:], " \t")
		}
		name = strings.TrimPrefix(name, "*")
		if !ok || name == "" {
			return nil, fmt.Errorf("SHA256SUMS line %d: want \"<sha256>  <file name>\"", n)
		}
		if len(sum) != 64 {
			return nil, fmt.Errorf("SHA256SUMS line %d: %q is not a sha256 digest (64 hex digits)", n, sum)
		}
		if _, err := hex.DecodeString(sum); err != nil {
			return nil, fmt.Errorf("SHA256SUMS line %d: %q is not a sha256 digest (64 hex digits)", n, sum)
		}
		sum = strings.ToLower(sum)
		if strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
			return nil, fmt.Errorf("SHA256SUMS line %d: file name %q must not contain a path", n, name)
		}
		if prev, dup := sums[name]; dup && prev != sum {
			return nil, fmt.Errorf("SHA256SUMS line %d: %s is listed twice with different digests", n, name)
		}
		sums[name] = sum
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading SHA256SUMS: %w", err)
	}
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
