package moduledoc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
)

// Extract reads the module package whose root is fsys's root: a module
// zip (*zip.Reader), an os.Root's FS, or any fs.FS. Symbolic links are
// followed only as fsys follows them (an os.Root never leaves its
// directory; a zip's links are not followed). Problems are diagnostics in
// the result; the error is only the context's.
func Extract(ctx context.Context, fsys fs.FS) (*Package, error) {
	return extract(ctx, &reader{fsys: fsys})
}

// ExtractDir reads the module directory dir as `push module` packs it:
// what .terraformignore leaves out (and .git, .terraform) is not read,
// symbolic links are followed only inside dir. The error is the
// context's, or dir's when it cannot be opened.
func ExtractDir(ctx context.Context, dir string) (*Package, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	r := &reader{fsys: root.FS()}
	r.ignore, err = readIgnoreRules(r.fsys)
	if err != nil {
		r.pkgDiags = append(r.pkgDiags, errorDiag("Unreadable "+modulepkg.IgnoreFileName, err.Error(), nil))
	}
	return extract(ctx, r)
}

func readIgnoreRules(fsys fs.FS) (*modulepkg.IgnoreRules, error) {
	f, err := fsys.Open(modulepkg.IgnoreFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return modulepkg.ParseIgnoreRules(io.LimitReader(f, MaxFileSize))
}

// reader reads one package within the limits.
type reader struct {
	fsys     fs.FS
	ignore   *modulepkg.IgnoreRules
	files    int   // configuration files read
	bytes    int64 // configuration bytes read
	pkgDiags []Diagnostic
}

func extract(ctx context.Context, r *reader) (*Package, error) {
	p := &Package{Submodules: []Module{}, Examples: []Module{}}
	root, err := r.readModule(ctx, ".")
	if err != nil {
		return nil, err
	}
	p.Root = *root
	for _, group := range []struct {
		dir  string
		into *[]Module
	}{{"modules", &p.Submodules}, {"examples", &p.Examples}} {
		for _, dir := range r.subdirs(group.dir) {
			m, err := r.readModule(ctx, dir)
			if err != nil {
				return nil, err
			}
			*group.into = append(*group.into, *m)
		}
	}
	p.Diagnostics = boundDiagnostics(r.pkgDiags)
	return p, nil
}

// entry is a directory entry with links resolved.
type entry struct {
	name string
	path string // from the package root
	dir  bool
}

// excluded reports what push module would leave out of the package.
func (r *reader) excluded(p string, dir bool) bool {
	parts := strings.Split(p, "/")
	ex := false
	for i, name := range parts {
		isDir := dir || i < len(parts)-1
		if name == ".git" || name == ".terraform" {
			return true
		}
		if r.ignore != nil {
			ex = r.ignore.Excluded(strings.Join(parts[:i+1], "/"), isDir, ex)
		}
	}
	return ex
}

// list lists the regular files and directories of dir, links resolved as
// fsys resolves them; a link that cannot be followed is a diagnostic.
func (r *reader) list(dir string, diags *[]Diagnostic) []entry {
	des, err := fs.ReadDir(r.fsys, dir)
	if err != nil {
		if dir == "." || !errors.Is(err, fs.ErrNotExist) {
			*diags = append(*diags, errorDiag("Unreadable directory", fmt.Sprintf("%s: %v", displayDir(dir), err), nil))
		}
		return nil
	}
	var out []entry
	for _, de := range des {
		p := path.Join(dir, de.Name())
		mode := de.Type()
		if mode&fs.ModeSymlink != 0 {
			fi, err := fs.Stat(r.fsys, p)
			if err != nil {
				*diags = append(*diags, errorDiag("Symbolic link not followed", fmt.Sprintf("%s cannot be followed inside the package: %v", p, err), &Pos{File: p}))
				continue
			}
			mode = fi.Mode().Type()
			if mode&fs.ModeSymlink != 0 {
				*diags = append(*diags, errorDiag("Symbolic link not followed", p+" is a symbolic link; links are not followed in this package", &Pos{File: p}))
				continue
			}
		}
		if !mode.IsDir() && !mode.IsRegular() {
			continue
		}
		if r.excluded(p, mode.IsDir()) {
			continue
		}
		out = append(out, entry{name: de.Name(), path: p, dir: mode.IsDir()})
	}
	return out
}

// subdirs lists the module directories under dir (modules, examples),
// at most MaxModules of them.
func (r *reader) subdirs(dir string) []string {
	var out []string
	for _, e := range r.list(dir, &r.pkgDiags) {
		if !e.dir || strings.HasPrefix(e.name, ".") {
			continue
		}
		if len(out) == MaxModules {
			r.pkgDiags = append(r.pkgDiags, errorDiag("Too many modules", fmt.Sprintf("%s has more than %d directories; only the first %d are read", dir, MaxModules, MaxModules), nil))
			break
		}
		out = append(out, e.path)
	}
	return out
}

func displayDir(dir string) string {
	if dir == "." {
		return "the package root"
	}
	return dir
}

// The configuration file extensions, longest first so that ".tf.json" is
// not taken for ".json" (OpenTofu's parser_config_dir.go).
var configExts = []string{".tofu.json", ".tf.json", ".tofu", ".tf"}

// configExt is the configuration extension of name, or "".
func configExt(name string) string {
	for _, ext := range configExts {
		if strings.HasSuffix(name, ext) && len(name) > len(ext) {
			return ext
		}
	}
	return ""
}

// ignoredFile reports the editor and hidden files OpenTofu skips.
func ignoredFile(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") ||
		strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#")
}

// configFiles splits dir's configuration files as OpenTofu does: primary
// and override (override.tf, *_override.tf) files, sorted by name, a
// .tofu file hiding the .tf file of the same name.
func configFiles(entries []entry) (primary, override []entry) {
	names := map[string]bool{}
	for _, e := range entries {
		names[e.name] = true
	}
	for _, e := range entries {
		ext := configExt(e.name)
		if e.dir || ext == "" || ignoredFile(e.name) {
			continue
		}
		base := strings.TrimSuffix(e.name, ext)
		if strings.HasPrefix(ext, ".tf") && names[base+strings.Replace(ext, ".tf", ".tofu", 1)] {
			continue
		}
		if base == "override" || strings.HasSuffix(base, "_override") {
			override = append(override, e)
		} else {
			primary = append(primary, e)
		}
	}
	byName := func(a, b entry) int { return strings.Compare(a.name, b.name) }
	slices.SortFunc(primary, byName)
	slices.SortFunc(override, byName)
	return primary, override
}

// readmeNames are the README names looked for, in order of preference.
var readmeNames = []string{"README.md", "readme.md", "Readme.md", "README.markdown", "README", "README.txt"}

func readme(entries []entry) string {
	for _, want := range readmeNames {
		for _, e := range entries {
			if !e.dir && e.name == want {
				return e.path
			}
		}
	}
	return ""
}

// readFile reads one configuration file within the limits.
func (r *reader) readFile(e entry) ([]byte, *Diagnostic) {
	if r.files >= MaxFiles {
		d := errorDiag("Too many configuration files", fmt.Sprintf("%s is not read: the package has more than %d configuration files", e.path, MaxFiles), nil)
		return nil, &d
	}
	f, err := r.fsys.Open(e.path)
	if err != nil {
		d := errorDiag("Unreadable file", fmt.Sprintf("%s: %v", e.path, err), &Pos{File: e.path})
		return nil, &d
	}
	defer f.Close()
	limit := min(int64(MaxFileSize), MaxTotalSize-r.bytes)
	src, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		d := errorDiag("Unreadable file", fmt.Sprintf("%s: %v", e.path, err), &Pos{File: e.path})
		return nil, &d
	}
	if int64(len(src)) > limit {
		detail := fmt.Sprintf("%s is larger than %d bytes, the most a configuration file may have here", e.path, MaxFileSize)
		if limit < MaxFileSize {
			detail = fmt.Sprintf("%s is not read: the package's configuration files add up to more than %d bytes", e.path, MaxTotalSize)
		}
		d := errorDiag("File too large", detail, &Pos{File: e.path})
		return nil, &d
	}
	r.files++
	r.bytes += int64(len(src))
	return src, nil
}

func errorDiag(summary, detail string, pos *Pos) Diagnostic {
	return Diagnostic{Severity: SeverityError, Summary: summary, Detail: detail, Pos: pos}
}
