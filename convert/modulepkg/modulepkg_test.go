package modulepkg

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// writeTree creates files (name → content; a name ending in "*" is made
// executable) under dir.
func writeTree(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, "*") {
			name, mode = strings.TrimSuffix(name, "*"), 0o755
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
}

func packBytes(t *testing.T, dir string, opts Options) ([]byte, []string) {
	t.Helper()
	var buf bytes.Buffer
	names, err := Write(context.Background(), &buf, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), names
}

func packNames(t *testing.T, dir string) []string {
	t.Helper()
	_, names := packBytes(t, dir, Options{AllowNoRoot: true})
	return names
}

var sampleModule = map[string]string{
	"main.tf":                 "variable \"x\" {}\n",
	"outputs.tf":              "output \"y\" { value = var.x }\n",
	"modules/sub/main.tf":     "output \"z\" { value = 1 }\n",
	"modules/sub/README.md":   strings.Repeat("compressible text ", 500),
	"scripts/run.sh*":         "#!/bin/sh\necho hi\n",
	"files/random.bin":        string(randomBytes(5000)),
	"a.txt":                   "sorts before a/ in byte order\n",
	"a/b.txt":                 "nested\n",
	"deep/er/than/that/x.tpl": "${x}\n",
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	x := uint32(2463534242)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

// The same tree gives the same bytes whatever its timestamps, creation
// order, umask-affected permissions and parallelism.
func TestPackModuleDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	writeTree(t, a, sampleModule)
	// b: created in another order, other mtimes, group-writable permissions.
	var names []string
	for n := range sampleModule {
		names = append(names, n)
	}
	for i := len(names) - 1; i >= 0; i-- {
		writeTree(t, b, map[string]string{names[i]: sampleModule[names[i]]})
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	filepath.WalkDir(b, func(p string, d fs.DirEntry, err error) error {
		if d.Type().IsRegular() {
			fi, _ := d.Info()
			os.Chmod(p, fi.Mode().Perm()|0o060)
		}
		return os.Chtimes(p, old, old)
	})

	zipA, namesA := packBytes(t, a, Options{})
	zipB, _ := packBytes(t, b, Options{Concurrency: 1})
	if !bytes.Equal(zipA, zipB) {
		t.Fatalf("same tree packed to different zips (%d and %d bytes)", len(zipA), len(zipB))
	}
	want := []string{"a.txt", "a/b.txt", "deep/er/than/that/x.tpl", "files/random.bin", "main.tf",
		"modules/sub/README.md", "modules/sub/main.tf", "outputs.tf", "scripts/run.sh"}
	if !reflect.DeepEqual(namesA, want) {
		t.Fatalf("entries %v, want %v", namesA, want)
	}

	// Pack writes the same bytes to its temporary file, with their digest.
	z, err := Pack(context.Background(), b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer z.Remove()
	onDisk, _ := os.ReadFile(z.Path)
	sum := sha256.Sum256(zipA)
	if !bytes.Equal(onDisk, zipA) || z.Digest.Encoded() != hex.EncodeToString(sum[:]) || z.Size != int64(len(zipA)) {
		t.Fatalf("Pack: %d bytes, digest %s; want %d bytes, sha256 %x", z.Size, z.Digest, len(zipA), sum)
	}
	if err := z.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(z.Path); !os.IsNotExist(err) {
		t.Fatalf("Remove left %s", z.Path)
	}

	zr, err := zip.NewReader(bytes.NewReader(zipA), int64(len(zipA)))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range zr.File {
		if f.Name != want[i] {
			t.Errorf("entry %d is %q, want %q (sorted, no directories)", i, f.Name, want[i])
		}
		wantMode := fs.FileMode(0o644)
		if f.Name == "scripts/run.sh" {
			wantMode = 0o755
		}
		if f.Mode() != wantMode {
			t.Errorf("%s: mode %v, want %v", f.Name, f.Mode(), wantMode)
		}
		if y, m, d := f.Modified.Date(); y != 1980 || m != 1 || d != 1 || len(f.Extra) != 0 {
			t.Errorf("%s: modified %v, extra %x; want 1980-01-01 and no extra fields", f.Name, f.Modified, f.Extra)
		}
		r, _ := f.Open()
		got, err := io.ReadAll(r)
		if err != nil || string(got) != sampleModule[f.Name] && string(got) != sampleModule[f.Name+"*"] {
			t.Errorf("%s: content differs (%v)", f.Name, err)
		}
	}
	if m := zr.File[3].Method; m != zip.Store {
		t.Errorf("incompressible file stored with method %d, want Store", m)
	}
	if m := zr.File[5].Method; m != zip.Deflate {
		t.Errorf("text stored with method %d, want Deflate", m)
	}
	// zip's own checker agrees the archive is sound.
	if _, err := CheckZip(zr, MaxSize); err != nil {
		t.Fatal(err)
	}
}

// A file larger than the in-memory limit is streamed, still
// deterministically, and unpacks intact.
func TestPackModuleLargeFile(t *testing.T) {
	dir := t.TempDir()
	big := randomBytes(inlineLimit + 12345)
	writeTree(t, dir, map[string]string{"main.tf": "", "big.bin": string(big)})
	z1, _ := packBytes(t, dir, Options{})
	os.Chtimes(filepath.Join(dir, "big.bin"), time.Unix(1, 0), time.Unix(1, 0))
	z2, _ := packBytes(t, dir, Options{})
	if !bytes.Equal(z1, z2) {
		t.Fatal("large-file zip is not deterministic")
	}
	zf := filepath.Join(t.TempDir(), "m.zip")
	os.WriteFile(zf, z1, 0o644)
	out := filepath.Join(t.TempDir(), "out")
	if _, err := Unpack(zf, out, 0); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(out, "big.bin"))
	if !bytes.Equal(got, big) {
		t.Fatal("large file did not round-trip")
	}
	// Incompressible content is stored, not deflated (it would not shrink);
	// compressible content of any size is deflated.
	writeTree(t, dir, map[string]string{"text.txt": strings.Repeat("resource \"x\" \"y\" {}\n", 1<<19), "mid.bin": string(big[:1<<20])})
	z3, _ := packBytes(t, dir, Options{})
	zr, _ := zip.NewReader(bytes.NewReader(z3), int64(len(z3)))
	for _, f := range zr.File {
		want := map[string]uint16{"big.bin": zip.Store, "mid.bin": zip.Store, "text.txt": zip.Deflate, "main.tf": zip.Store}[f.Name]
		if f.Method != want {
			t.Errorf("%s: method %d, want %d", f.Name, f.Method, want)
		}
	}
}

func TestPackModuleExcludes(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"main.tf":                         "",
		".git/config":                     "",
		".git/objects/ab/cdef":            "",
		"sub/.git":                        "gitdir: ../.git/modules/sub", // a submodule's .git file
		".terraform/modules/m/main.tf":    "",
		".terraform.lock.hcl":             "kept: tofu ignores it in child modules",
		"terraform.tfstate":               "",
		"terraform.tfstate.backup":        "",
		"env/dev.tfstate":                 "",
		".terraformignore":                "# comment\n\n  *.log  \nbuild/\n!build/keep.tf\n/docs\nsecret?.txt\nvendor\n!vendor/LICENSE\n",
		"app.log":                         "",
		"sub/deep/trace.log":              "",
		"build/out.bin":                   "",
		"build/keep.tf":                   "",
		"build/nested/x":                  "",
		"docs/index.md":                   "",
		"sub/docs/kept.md":                "", // /docs is anchored at the root
		"secret1.txt":                     "",
		"secret12.txt":                    "", // ? is one character
		"vendor/lib/a.tf":                 "", // "vendor" excludes the directory's content
		"vendor/LICENSE":                  "", // but a negation re-includes
		"notes/logbook.md":                "",
		"modules/x/main.tf":               "",
		"modules/x/terraform.tfstate.d/a": "", // a directory, not a state file
	})
	got := packNames(t, dir)
	want := []string{
		".terraform.lock.hcl", ".terraformignore", "build/keep.tf", "main.tf", "modules/x/main.tf",
		"modules/x/terraform.tfstate.d/a", "notes/logbook.md", "secret12.txt", "sub/docs/kept.md", "vendor/LICENSE",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("packed %v\nwant     %v", got, want)
	}
}

// Without negations an excluded directory is not even read: a link out of
// the tree inside it, or an excluded link, is no error.
func TestPackModuleSkipsIgnoredDirectories(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	writeTree(t, dir, map[string]string{"main.tf": "", ".terraformignore": "private/\ncache\n", "private/x": ""})
	must(t, os.Symlink(outside, filepath.Join(dir, "private", "escape")))
	must(t, os.Symlink(outside, filepath.Join(dir, "cache")))
	must(t, os.Symlink(outside, filepath.Join(dir, ".terraform")))
	must(t, os.Symlink("nowhere", filepath.Join(dir, ".git")))
	if got := packNames(t, dir); !reflect.DeepEqual(got, []string{".terraformignore", "main.tf"}) {
		t.Fatal(got)
	}
}

func TestIgnoreRules(t *testing.T) {
	// Cases follow go-slug's own tests of .terraformignore.
	rs, err := ParseIgnoreRules(strings.NewReader(`
# comments are ignored
 # extra spaces are irrelevant
   baz.txt
terraform.d/
!/terraform.d/
**/foo/bar.tf
foo/*.md
bar/something-[a-z].txt
boop.txt
!/boop.txt
`))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		"included.txt":                   false,
		"baz.txt":                        true,
		"parent/foo/baz.txt":             true,
		"parent/foo/bar.tf":              true,
		"parent/bar/bar.tf":              false,
		"something/with-baz.txt":         false,
		"something/baz.x":                false,
		"foo/ignored-doc.md":             true,
		"bar/something-a.txt":            true,
		"bar/something-1.txt":            false,
		"some-module/terraform.d/x":      true,
		"terraform.d/foo":                false,
		"baz/boop.txt":                   true,
		"boop.txt":                       false,
		"deeply/nested/foo/guide.md":     true,
		"foo/sub/not-directly-below.md":  false,
		"some-module/terraform.d/nested": true,
	} {
		if got := rs.Excluded(path, false, false); got != want {
			t.Errorf("%s: excluded = %v, want %v", path, got, want)
		}
	}
	if !rs.Excluded("some-module/terraform.d", true, false) {
		t.Error("directory terraform.d below the root should be excluded")
	}
	if rs.Excluded("terraform.d", false, false) {
		t.Error("a file named terraform.d is not matched by terraform.d/")
	}
	if _, err := ParseIgnoreRules(strings.NewReader("[unterminated\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("bad pattern: %v", err)
	}
}

func TestPackModuleSymlinks(t *testing.T) {
	outside := t.TempDir()
	writeTree(t, outside, map[string]string{"secret.tf": "outside"})

	t.Run("inside is followed", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"main.tf": "root", "shared/common.tf": "common", "shared/tool.sh*": "#!/bin/sh\n"})
		must(t, os.Symlink("shared/common.tf", filepath.Join(dir, "common.tf")))
		must(t, os.Symlink("shared", filepath.Join(dir, "linked")))
		zb, names := packBytes(t, dir, Options{})
		want := []string{"common.tf", "linked/common.tf", "linked/tool.sh", "main.tf", "shared/common.tf", "shared/tool.sh"}
		if !reflect.DeepEqual(names, want) {
			t.Fatalf("got %v, want %v", names, want)
		}
		zr, _ := zip.NewReader(bytes.NewReader(zb), int64(len(zb)))
		for _, f := range zr.File {
			if !f.Mode().IsRegular() {
				t.Errorf("%s has mode %v: links must become regular files", f.Name, f.Mode())
			}
			if f.Name == "linked/tool.sh" && f.Mode() != 0o755 {
				t.Errorf("linked executable has mode %v", f.Mode())
			}
			if f.Name == "common.tf" {
				r, _ := f.Open()
				b, _ := io.ReadAll(r)
				if string(b) != "common" {
					t.Errorf("common.tf holds %q", b)
				}
			}
		}
	})
	t.Run("escape is refused", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"main.tf": ""})
		must(t, os.MkdirAll(filepath.Join(dir, "mods"), 0o755))
		must(t, os.Symlink(filepath.Join(outside, "secret.tf"), filepath.Join(dir, "mods", "evil.tf")))
		_, err := Write(context.Background(), io.Discard, dir, Options{})
		if err == nil || !strings.Contains(err.Error(), "mods/evil.tf") || !strings.Contains(err.Error(), "outside the module directory") {
			t.Fatalf("want an error naming mods/evil.tf as pointing outside, got %v", err)
		}
	})
	t.Run("relative escape is refused", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, filepath.Join(dir, "mod"), map[string]string{"main.tf": "", "sibling-of-root": ""})
		must(t, os.Symlink("../../"+filepath.Base(dir), filepath.Join(dir, "mod", "up")))
		_, err := Write(context.Background(), io.Discard, filepath.Join(dir, "mod"), Options{})
		if err == nil || !strings.Contains(err.Error(), "symbolic link up ->") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("escape through an included name is refused", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"main.tf": "", ".terraformignore": "local/\n!local/keep.tf\n"})
		must(t, os.Symlink(outside, filepath.Join(dir, "local")))
		// A negation might re-include something below local/, so the link
		// must be followed, and it leads out of the tree.
		_, err := Write(context.Background(), io.Discard, dir, Options{})
		if err == nil || !strings.Contains(err.Error(), "symbolic link local ->") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("cycle is refused", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"main.tf": "", "a/x.tf": ""})
		must(t, os.Symlink("..", filepath.Join(dir, "a", "loop")))
		_, err := Write(context.Background(), io.Discard, dir, Options{})
		if err == nil || !strings.Contains(err.Error(), "a/loop") || !strings.Contains(err.Error(), "cycle") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("dangling is refused", func(t *testing.T) {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"main.tf": ""})
		must(t, os.Symlink("nowhere.tf", filepath.Join(dir, "gone.tf")))
		_, err := Write(context.Background(), io.Discard, dir, Options{})
		if err == nil || !strings.Contains(err.Error(), "gone.tf") {
			t.Fatalf("got %v", err)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestPackModuleRoot(t *testing.T) {
	for _, root := range []string{"main.tf", "main.tofu", "main.tf.json", "x.tofu.json"} {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{root: "{}"})
		if _, err := Write(context.Background(), io.Discard, dir, Options{}); err != nil {
			t.Errorf("%s at the root: %v", root, err)
		}
	}
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"modules/a/main.tf": "", "README.md": "", ".tf": ""})
	_, err := Write(context.Background(), io.Discard, dir, Options{})
	if err == nil || !errors.Is(err, ErrNoRootModule) {
		t.Fatalf("no root module: %v", err)
	}
	if _, err := Write(context.Background(), io.Discard, dir, Options{AllowNoRoot: true}); err != nil {
		t.Fatalf("--allow-no-root: %v", err)
	}

	empty := t.TempDir()
	writeTree(t, empty, map[string]string{".git/HEAD": "", "terraform.tfstate": ""})
	_, err = Write(context.Background(), io.Discard, empty, Options{AllowNoRoot: true})
	if err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty module: %v", err)
	}
	if _, err := Pack(context.Background(), filepath.Join(dir, "README.md"), Options{}); err == nil {
		t.Fatal("packing a file as a directory succeeded")
	}
}

// entry is one raw zip entry for craftZip.
type entry struct {
	name string
	mode fs.FileMode
	body string
}

// craftZip writes a zip with raw entries, as an attacker would.
func craftZip(t *testing.T, entries ...entry) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "evil.zip")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, e := range entries {
		fh := &zip.FileHeader{Name: e.name, Method: zip.Store}
		if e.mode != 0 {
			fh.SetMode(e.mode)
		}
		w, err := zw.CreateHeader(fh)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, e.body)
	}
	must(t, zw.Close())
	must(t, f.Close())
	return p
}

func TestUnpackModuleZipRefusesZipSlip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []entry
		want    string
	}{
		{"parent", []entry{{name: "main.tf"}, {name: "../evil.tf", body: "pwned"}}, "outside"},
		{"nested parent", []entry{{name: "main.tf"}, {name: "a/../../evil.tf", body: "pwned"}}, "outside"},
		{"dot-dot inside", []entry{{name: "main.tf"}, {name: "a/../b.tf"}}, "outside"},
		{"absolute", []entry{{name: "main.tf"}, {name: "/tmp/evil.tf", body: "pwned"}}, "absolute"},
		{"windows drive", []entry{{name: "C:/evil.tf"}}, "absolute"},
		{"backslash", []entry{{name: "main.tf"}, {name: `..\evil.tf`}}, "unsafe"},
		{"symlink", []entry{{name: "main.tf"}, {name: "link", mode: fs.ModeSymlink | 0o777, body: "/etc/passwd"}}, "symbolic link"},
		{"symlink then write through it", []entry{{name: "d", mode: fs.ModeSymlink | 0o777, body: ".."}, {name: "d/evil.tf", body: "pwned"}}, "symbolic link"},
		{"device", []entry{{name: "main.tf"}, {name: "null", mode: fs.ModeDevice | fs.ModeCharDevice | 0o666}}, "not a regular file"},
		{"duplicate", []entry{{name: "main.tf"}, {name: "./main.tf"}}, "twice"},
		{"empty", []entry{{name: "dir/"}}, "no files"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zf := craftZip(t, tc.entries...)
			parent := t.TempDir()
			out := filepath.Join(parent, "out")
			_, err := Unpack(zf, out, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error containing %q, got %v", tc.want, err)
			}
			left, _ := os.ReadDir(parent)
			if len(left) != 0 {
				t.Fatalf("a refused unpack left %v in %s", left, parent)
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(parent), "evil.tf")); err == nil {
				t.Fatal("zip slip wrote outside the target")
			}
			if _, err := OpenZip(zf, true); err == nil {
				t.Fatal("push would accept the same zip")
			}
		})
	}
}

func TestUnpackModuleZip(t *testing.T) {
	src := t.TempDir()
	writeTree(t, src, sampleModule)
	z, err := Pack(context.Background(), src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer z.Remove()

	parent := t.TempDir()
	out := filepath.Join(parent, "mod")
	must(t, os.Mkdir(out, 0o755)) // an empty directory is fine
	files, err := Unpack(z.Path, out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(files, z.Files) {
		t.Fatalf("unpacked %v, packed %v", files, z.Files)
	}
	for name, body := range sampleModule {
		exec := strings.HasSuffix(name, "*")
		name = strings.TrimSuffix(name, "*")
		p := filepath.Join(out, filepath.FromSlash(name))
		got, err := os.ReadFile(p)
		if err != nil || string(got) != body {
			t.Errorf("%s: %v", name, err)
		}
		fi, _ := os.Stat(p)
		if exec != (fi.Mode()&0o100 != 0) {
			t.Errorf("%s: mode %v", name, fi.Mode())
		}
	}
	if left, _ := os.ReadDir(parent); len(left) != 1 {
		t.Errorf("temporary directories left beside the target: %v", left)
	}

	// Repacking what was unpacked gives the same zip: a round trip.
	again, _ := packBytes(t, out, Options{})
	orig, _ := os.ReadFile(z.Path)
	if !bytes.Equal(again, orig) {
		t.Error("pack → unpack → pack changed the zip")
	}

	if _, err := Unpack(z.Path, out, 0); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("unpacking over a non-empty directory: %v", err)
	}
	if _, err := Unpack(z.Path, filepath.Join(t.TempDir(), "small"), 100); err == nil || !strings.Contains(err.Error(), "more than 100 bytes") {
		t.Errorf("size limit: %v", err)
	}
}

func TestOpenModuleZip(t *testing.T) {
	good := craftZip(t, entry{name: "main.tf", body: "x"}, entry{name: "sub/"}, entry{name: "sub/a.tf"})
	z, err := OpenZip(good, false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(good)
	sum := sha256.Sum256(b)
	if z.Digest.Encoded() != hex.EncodeToString(sum[:]) || z.Size != int64(len(b)) || z.Path != good {
		t.Fatalf("got %+v", z)
	}
	if !reflect.DeepEqual(z.Files, []string{"main.tf", "sub/a.tf"}) {
		t.Fatalf("files %v", z.Files)
	}
	must(t, z.Remove())
	if _, err := os.Stat(good); err != nil {
		t.Fatal("Remove deleted the user's zip")
	}

	noRoot := craftZip(t, entry{name: "sub/a.tf"})
	if _, err := OpenZip(noRoot, false); err == nil || !errors.Is(err, ErrNoRootModule) {
		t.Fatalf("no root: %v", err)
	}
	notZip := filepath.Join(t.TempDir(), "x.zip")
	os.WriteFile(notZip, []byte("PK but not really"), 0o644)
	if _, err := OpenZip(notZip, true); err == nil || !strings.Contains(err.Error(), "not a readable zip") {
		t.Fatalf("not a zip: %v", err)
	}
}

// HashTree agrees with Pack without compressing, and sees
// every change that changes the zip.
func TestHashModuleTreeAndCache(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeTree(t, dir, sampleModule)
	z, err := Pack(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer z.Remove()
	tree, names, err := HashTree(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tree != z.Tree || !reflect.DeepEqual(names, z.Files) {
		t.Fatalf("HashTree %s %v, Pack %s %v", tree, names, z.Tree, z.Files)
	}
	for name, change := range map[string]func(p string){
		"content": func(p string) { os.WriteFile(p, []byte("variable \"y\" {}\n"), 0o644) },
		"mode":    func(p string) { os.Chmod(p, 0o755) },
		"name":    func(p string) { os.Rename(p, filepath.Join(filepath.Dir(p), "other.tf")) },
	} {
		c := t.TempDir()
		writeTree(t, c, sampleModule)
		change(filepath.Join(c, "main.tf"))
		other, _, err := HashTree(ctx, c, Options{})
		if err != nil || other == tree {
			t.Errorf("a %s change left the tree digest unchanged (%v)", name, err)
		}
	}

	cache := &Cache{Dir: filepath.Join(t.TempDir(), "cache")}
	if _, _, ok := cache.Lookup(tree); ok {
		t.Fatal("empty cache hit")
	}
	cache.Store(z)
	zd, size, ok := cache.Lookup(tree)
	if !ok || zd != z.Digest || size != z.Size {
		t.Fatalf("cache gave %s %d %v, want %s %d", zd, size, ok, z.Digest, z.Size)
	}
	os.WriteFile(filepath.Join(cache.Dir, tree.Encoded()+".json"), []byte(`{"zip":"sha256:nothex","size":1}`), 0o600)
	if _, _, ok := cache.Lookup(tree); ok {
		t.Fatal("a corrupt record was trusted")
	}
	var nilCache *Cache
	nilCache.Store(z)
	if _, _, ok := nilCache.Lookup(tree); ok {
		t.Fatal("nil cache hit")
	}
}

// The record of file stamps spares reading unchanged files, and an edit
// that restores size and modification time is still seen (the change time
// moves).
func TestHashModuleTreeStamps(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeTree(t, dir, sampleModule)
	cache := &Cache{Dir: t.TempDir()}
	opts := Options{Cache: cache}
	want, _, err := HashTree(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := filepath.EvalSymlinks(dir)
	rec := cache.loadStamps(root)
	if rec == nil || len(rec.Files) != 9 {
		t.Skipf("no stamps on this platform (%v)", rec)
	}
	// Pretend the hashes were recorded long after the files were written,
	// and plant a wrong hash for main.tf: a trusted record shows through.
	age := func(r *stampRecord) {
		r.Written += int64(time.Hour)
		b, _ := json.Marshal(r)
		cache.write(cache.stampFile(root), b)
	}
	e := rec.Files["main.tf"]
	e.Sum = strings.Repeat("00", sha256.Size)
	rec.Files["main.tf"] = e
	age(rec)
	if got, _, _ := HashTree(ctx, dir, opts); got == want {
		t.Fatal("the stamp record was not used")
	}
	if got, _, _ := HashTree(ctx, dir, Options{}); got != want {
		t.Fatal("without a cache the tree digest changed")
	}

	// Fix the record, then edit outputs.tf keeping its size and mtime.
	cache.storeStamps(root, mustCollect(t, dir), mustSums(t, dir))
	rec = cache.loadStamps(root)
	age(rec)
	if got, _, _ := HashTree(ctx, dir, opts); got != want {
		t.Fatal("a correct, trusted record changed the digest")
	}
	p := filepath.Join(dir, "outputs.tf")
	fi, _ := os.Stat(p)
	b, _ := os.ReadFile(p)
	os.WriteFile(p, bytes.Replace(b, []byte("y"), []byte("z"), 1), 0o644)
	os.Chtimes(p, fi.ModTime(), fi.ModTime())
	got, _, _ := HashTree(ctx, dir, opts)
	fresh, _, _ := HashTree(ctx, dir, Options{})
	if got == want || got != fresh {
		t.Fatal("an edit that kept size and mtime was missed")
	}
}

func mustCollect(t *testing.T, dir string) []moduleFile {
	_, files, err := collectModuleFiles(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func mustSums(t *testing.T, dir string) [][sha256.Size]byte {
	var sums [][sha256.Size]byte
	for _, f := range mustCollect(t, dir) {
		b, _ := os.ReadFile(f.path)
		sums = append(sums, sha256.Sum256(b))
	}
	return sums
}
