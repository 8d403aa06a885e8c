package modulepkg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
)

// Module packages are zips whose root is the module package root
// (docs/reference.md §2). Pack makes them reproducibly: entries sorted by
// name, every timestamp 1980-01-01 00:00, permissions 0644 or 0755, no
// directory entries, no extra fields, so the same tree always gives the same
// bytes and hence the same OCI digest.

// RootSuffixes are the file name endings that make a directory an
// OpenTofu module.
var RootSuffixes = []string{".tf", ".tofu", ".tf.json", ".tofu.json"}

// IgnoreFileName is read from a module's root for extra exclusions.
const IgnoreFileName = ".terraformignore"

// ErrNoRootModule is returned for a package without a module at its root
// when none was allowed.
var ErrNoRootModule = errors.New("it is not a module (its modules may all be in subdirectories, used as //subdir)")

// checkModuleRoot refuses an empty package, and one without a configuration
// file at its root unless allowNoRoot.
func checkModuleRoot(names []string, allowNoRoot bool) error {
	if len(names) == 0 {
		return errors.New("the module package is empty (after exclusions)")
	}
	if allowNoRoot {
		return nil
	}
	for _, n := range names {
		if strings.Contains(n, "/") {
			continue
		}
		for _, s := range RootSuffixes {
			if strings.HasSuffix(n, s) && len(n) > len(s) {
				return nil
			}
		}
	}
	return fmt.Errorf("no %s file at the package root, so %w", strings.Join(RootSuffixes, ", "), ErrNoRootModule)
}

// alwaysExcluded reports names left out whatever .terraformignore says.
func alwaysExcluded(name string, dir bool) bool {
	if name == ".git" || name == ".terraform" {
		return true
	}
	if !dir {
		ok, _ := path.Match("*.tfstate*", name)
		return ok
	}
	return false
}

// Bounds of one walk of a module directory, whatever the tree holds
// (variables so that tests can change them). Entries and links are
// counted each time the walk meets them: directories linking twice to
// the directory before them (d1…dN) make 2^N paths of N links.
var (
	// maxWalkEntries bounds the directory entries a walk examines.
	maxWalkEntries = 2 * MaxFiles
	// maxWalkLinks bounds the symbolic links a walk follows.
	maxWalkLinks = 10_000
)

type moduleWalker struct {
	ctx     context.Context
	root    string // resolved absolute root
	rules   *IgnoreRules
	negates bool
	match   matchBudget // for rules
	files   []moduleFile
	total   int64           // bytes in files so far
	active  map[string]bool // resolved directories being walked (cycle check)
	entries int             // entries examined so far
	links   int             // links followed so far
}

func collectModuleFiles(ctx context.Context, dir string) (string, []moduleFile, error) {
	w, err := newModuleWalker(ctx, dir)
	if err != nil {
		return "", nil, err
	}
	if err := w.collect(); err != nil {
		return "", nil, err
	}
	return w.root, w.files, nil
}

// newModuleWalker resolves dir and reads its .terraformignore.
func newModuleWalker(ctx context.Context, dir string) (*moduleWalker, error) {
	root, err := moduleRoot(dir)
	if err != nil {
		return nil, err
	}
	w := &moduleWalker{ctx: ctx, root: root, active: map[string]bool{}, match: matchBudget{left: maxIgnoreWork}}
	if w.rules, err = readIgnoreRules(root); err != nil {
		return nil, err
	}
	w.negates = w.rules.hasNegations()
	return w, nil
}

// collect walks the root, leaving the files to pack sorted by name.
func (w *moduleWalker) collect() error {
	if err := w.walk(w.root, "", false); err != nil {
		return err
	}
	sort.Slice(w.files, func(i, j int) bool { return w.files[i].name < w.files[j].name })
	return nil
}

// moduleRoot resolves dir, which must be a directory.
func moduleRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("module directory: %w", err)
	}
	fi, err := os.Stat(root)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return root, nil
}

// readIgnoreRules reads the root's .terraformignore (nil rules without
// one), refusing one larger than maxIgnoreFile.
func readIgnoreRules(root string) (*IgnoreRules, error) {
	f, err := localfile.OpenRegular(filepath.Join(root, IgnoreFileName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", IgnoreFileName, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(maxIgnoreFile)+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", IgnoreFileName, err)
	}
	if len(b) > maxIgnoreFile {
		return nil, fmt.Errorf("%s is larger than %d bytes, more than a module package may have", IgnoreFileName, maxIgnoreFile)
	}
	return ParseIgnoreRules(bytes.NewReader(b))
}

// walk adds the files below realDir, whose entry name prefix is rel.
func (w *moduleWalker) walk(realDir, rel string, excluded bool) error {
	w.active[realDir] = true
	defer delete(w.active, realDir)
	entries, err := os.ReadDir(realDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := w.count(); err != nil {
			return err
		}
		if err := w.visit(realDir, rel, e, excluded); err != nil {
			return err
		}
	}
	return nil
}

// count counts an entry met, and stops the walk when its context ends or
// it has examined maxWalkEntries.
func (w *moduleWalker) count() error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if w.entries++; w.entries > maxWalkEntries {
		return fmt.Errorf("the walk met more than %d entries (each counted again when reached through a symbolic link): more than a module package may have", maxWalkEntries)
	}
	return nil
}

// visit takes one directory entry: a file to pack, a directory to walk, or
// something left out or refused. Only files to pack are stat'ed.
func (w *moduleWalker) visit(realDir, rel string, e os.DirEntry, excluded bool) error {
	name := e.Name()
	entry := name
	if rel != "" {
		entry = rel + "/" + name
	}
	if strings.ContainsAny(name, "\\\x00") {
		return fmt.Errorf("%s: file names with a backslash cannot be packed portably", entry)
	}
	p := filepath.Join(realDir, name)
	if e.Type()&fs.ModeSymlink == 0 {
		return w.take(p, name, entry, e.Type(), e.Info, excluded)
	}
	// A link that is left out whatever it points to is not followed, so
	// a .terraform symlinked elsewhere or an ignored dangling link does
	// no harm.
	if w.excludedEitherWay(name, entry, excluded) {
		return nil
	}
	if w.match.spent() {
		return w.tooMuchMatching()
	}
	target, fi, err := w.follow(p, entry)
	if err != nil {
		return err
	}
	return w.take(target, name, entry, fi.Mode().Type(), func() (fs.FileInfo, error) { return fi, nil }, excluded)
}

// take walks the directory or adds the regular file at p (entry, of type
// mode; info stats it), unless it is left out, and refuses other kinds.
func (w *moduleWalker) take(p, name, entry string, mode fs.FileMode, info func() (fs.FileInfo, error), excluded bool) error {
	isDir := mode.IsDir()
	if alwaysExcluded(name, isDir) {
		return nil
	}
	ex := w.rules.excluded(entry, isDir, excluded, &w.match)
	if w.match.spent() {
		return w.tooMuchMatching()
	}
	switch {
	case isDir:
		return w.enter(p, entry, ex)
	case ex:
		return nil
	}
	fi, err := info()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is a %s, not a regular file or directory", entry, fi.Mode().Type())
	}
	return w.add(p, entry, fi)
}

// enter walks a directory unless it is excluded (and nothing below it can
// be re-included) or a link back to a directory being walked.
func (w *moduleWalker) enter(p, entry string, excluded bool) error {
	if excluded && !w.negates {
		return nil
	}
	if w.active[p] {
		return fmt.Errorf("%s: symbolic link makes a cycle (it points to a directory that contains it)", entry)
	}
	return w.walk(p, entry, excluded)
}

// add records a file to pack, within the package limits.
func (w *moduleWalker) add(p, entry string, fi fs.FileInfo) error {
	if len(w.files) >= MaxFiles {
		return fmt.Errorf("more than %d files: too many for a module package", MaxFiles)
	}
	if w.total += fi.Size(); w.total > MaxSize {
		return fmt.Errorf("%s: the module's files add up to more than %d bytes, more than OpenTofu users can pull (oci-tofu pull module refuses it too)", entry, int64(MaxSize))
	}
	w.files = append(w.files, moduleFile{name: entry, path: p, size: fi.Size(), exec: fi.Mode()&0o111 != 0, stamp: stampOf(fi)})
	return nil
}

// excludedEitherWay reports whether an entry is left out both as a file
// and as a directory (for a directory, with no negation that could
// re-include something below it).
func (w *moduleWalker) excludedEitherWay(name, entry string, parentExcluded bool) bool {
	if alwaysExcluded(name, false) && alwaysExcluded(name, true) {
		return true
	}
	return !w.negates && w.rules.excluded(entry, false, parentExcluded, &w.match) && w.rules.excluded(entry, true, parentExcluded, &w.match)
}

func (w *moduleWalker) tooMuchMatching() error {
	return fmt.Errorf("%s: its rules need more matching work than %d steps (rules times the length of the names they are tried on) for this tree: use fewer or simpler rules", IgnoreFileName, maxIgnoreWork)
}

// follow counts a symbolic link followed, up to maxWalkLinks, and
// resolves it.
func (w *moduleWalker) follow(p, entry string) (string, fs.FileInfo, error) {
	if w.links++; w.links > maxWalkLinks {
		return "", nil, fmt.Errorf("%s: the walk followed more than %d symbolic links (each counted again when reached through another link; links to directories that link again multiply the paths to walk): more than a module package may have", entry, maxWalkLinks)
	}
	return w.resolve(p, entry)
}

// resolve follows a symbolic link, refusing one that leads outside the root.
func (w *moduleWalker) resolve(p, entry string) (string, fs.FileInfo, error) {
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		dest, _ := os.Readlink(p)
		return "", nil, fmt.Errorf("symbolic link %s -> %s cannot be resolved: %w", entry, dest, err)
	}
	r, err := filepath.Rel(w.root, target)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		dest, _ := os.Readlink(p)
		return "", nil, fmt.Errorf("symbolic link %s -> %s points outside the module directory (to %s); copy the content in or remove the link", entry, dest, target)
	}
	fi, err := os.Stat(target)
	if err != nil {
		return "", nil, err
	}
	return target, fi, nil
}
