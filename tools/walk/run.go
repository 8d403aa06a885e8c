package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/tools/cover"
)

// meter runs the walks: the test packages are built once, with coverage
// of the whole module, and each binary run runs times per walk without
// its request and as many with it.
type meter struct {
	dir     string // the test binaries and profiles
	module  string // the module's path, as the profiles name files
	sources *sources
}

// newMeter builds the test binaries of walks' packages, in one go command
// so that the packages they share are instrumented once.
func newMeter(walks []walk) (*meter, error) {
	gomod, err := os.ReadFile("go.mod")
	if err != nil {
		return nil, fmt.Errorf("run from the module's root: %w", err)
	}
	dir, err := os.MkdirTemp("", "walk")
	if err != nil {
		return nil, err
	}
	m := &meter{dir: dir, module: modfile.ModulePath(gomod), sources: newSources()}
	args := append([]string{"test", "-c", "-tags", "walk", "-covermode=count", "-coverpkg=./...", "-o", dir + "/"}, packages(walks)...)
	if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
		m.close()
		return nil, fmt.Errorf("building the walks: %v\n%s", err, out)
	}
	return m, nil
}

// packages are the walks' test packages, each once.
func packages(walks []walk) []string {
	var pkgs []string
	for _, w := range walks {
		if !slices.Contains(pkgs, w.pkg) {
			pkgs = append(pkgs, w.pkg)
		}
	}
	return pkgs
}

func (m *meter) close() { os.RemoveAll(m.dir) }

// runs is how many times each walk runs without and with its request.
// The setup's counts vary from run to run (sorting what a map yields
// compares more or less often), so a block counts as entered when the
// fewest runs of it with the request exceed the most without it. With
// three runs each, a sort's comparisons in the setup passed for the
// request's now and then (names.ComparePlatforms in the warm walk); with
// five, a block whose counts only vary does so about once in 250.
const runs = 5

// measure runs w without and with its request and says what the request
// alone entered.
func (m *meter) measure(w walk) (*entered, error) {
	bin := filepath.Join(m.dir, filepath.Base(w.pkg)+".test") // as go test -c -o DIR/ names it
	most, fewest := map[block]int{}, map[block]int{}
	for r := range runs {
		for walking := range 2 {
			profile := filepath.Join(m.dir, fmt.Sprintf("%s.%d.%d", w.test, r, walking))
			if err := run(bin, w, walking, profile); err != nil {
				return nil, err
			}
			counts, err := m.readProfile(profile)
			if err != nil {
				return nil, err
			}
			if walking == 0 {
				keep(most, counts, func(n, kept int) bool { return n > kept })
			} else {
				keep(fewest, counts, func(n, kept int) bool { return n < kept })
			}
		}
	}
	e := newEntered()
	for b, n := range fewest {
		if n > most[b] && counted(b.file) {
			fn, err := m.sources.function(b.file, b.line)
			if err != nil {
				return nil, err
			}
			e.add(b.file, fn)
		}
	}
	return e, nil
}

// keep keeps each block's count in kept where it is the first or better
// than the count kept.
func keep(kept, counts map[block]int, better func(n, kept int) bool) {
	for b, n := range counts {
		if k, ok := kept[b]; !ok || better(n, k) {
			kept[b] = n
		}
	}
}

// run runs w's test from its package's directory, with WALK=walking.
func run(bin string, w walk, walking int, profile string) error {
	cmd := exec.Command(bin, "-test.run", "^"+w.test+"$", "-test.count=1", "-test.coverprofile="+profile)
	cmd.Dir = w.pkg
	cmd.Env = append(os.Environ(), "WALK="+strconv.Itoa(walking))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s (WALK=%d): %v\n%s", w.test, walking, err, out)
	}
	return nil
}

// block is a coverage block: its file, relative to the module's root, and
// where it starts and ends.
type block struct {
	file                       string
	line, col, endLine, endCol int
}

// readProfile is a coverage profile's counts by block.
func (m *meter) readProfile(path string) (map[block]int, error) {
	profiles, err := cover.ParseProfiles(path)
	if err != nil {
		return nil, err
	}
	counts := map[block]int{}
	for _, p := range profiles {
		file := strings.TrimPrefix(p.FileName, m.module+"/")
		for _, b := range p.Blocks {
			counts[block{file, b.StartLine, b.StartCol, b.EndLine, b.EndCol}] += b.Count
		}
	}
	return counts, nil
}
