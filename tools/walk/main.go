// Command walk counts the files of protocol/proxy and protocol/source a
// request enters, for each walk of docs/architecture.md ("The path of a
// request"): the files whose coverage blocks one request adds to a test
// that sets up the same server without it (protocol/proxy/walk_test.go,
// built with -tags walk). It exits 1 when a walk enters more than -max
// files. Run from the module's root: go run ./tools/walk.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

var walks = []string{"TestWalkHeldVersion", "TestWalkModuleDownload"}

func main() {
	most := flag.Int("max", 12, "the most files a walk may enter")
	flag.Parse()
	dir, err := os.MkdirTemp("", "walk")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	over := false
	for _, walk := range walks {
		files, err := entered(dir, walk)
		if err != nil {
			fail(err)
		}
		fmt.Printf("%s: %d files\n", walk, len(files))
		for _, f := range files {
			fmt.Println("  " + f)
		}
		over = over || len(files) > *most
	}
	if over {
		fmt.Fprintf(os.Stderr, "walk: a walk enters more than %d files\n", *most)
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "walk:", err)
	os.Exit(2)
}

// entered runs walk without and with its request and lists the files of
// the seam's layers whose blocks the request alone ran.
func entered(dir, walk string) ([]string, error) {
	var counts [2]map[string]int
	for i := range counts {
		profile := filepath.Join(dir, fmt.Sprintf("%s.%d", walk, i))
		cmd := exec.Command("go", "test", "-tags", "walk", "-count=1", "-covermode=count", "-coverpkg=./protocol/...",
			"-coverprofile="+profile, "-run", "^"+walk+"$", "./protocol/proxy/")
		cmd.Env = append(os.Environ(), "WALK="+strconv.Itoa(i))
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s: %v\n%s", walk, err, out)
		}
		c, err := readProfile(profile)
		if err != nil {
			return nil, err
		}
		counts[i] = c
	}
	seen := map[string]bool{}
	for block, n := range counts[1] {
		if n <= counts[0][block] {
			continue
		}
		file, _, _ := strings.Cut(block, ":")
		file = strings.TrimPrefix(file, "github.com/oci-tofu/oci-tofu/")
		if strings.HasPrefix(file, "protocol/proxy/") || strings.HasPrefix(file, "protocol/source/") {
			seen[file] = true
		}
	}
	var files []string
	for f := range seen {
		files = append(files, f)
	}
	sort.Strings(files)
	return files, nil
}

// readProfile is a coverage profile's counts by block.
func readProfile(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	counts := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "mode:") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s: unexpected line %q", path, line)
		}
		n, err := strconv.Atoi(fields[2])
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		counts[fields[0]] += n
	}
	return counts, sc.Err()
}
