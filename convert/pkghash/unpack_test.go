package pkghash_test

import (
	"archive/zip"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

func reader(t testing.TB, b []byte) *zip.Reader {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return zr
}

func file(name, data string) testenv.ZipEntry {
	return testenv.ZipEntry{Name: name, Data: []byte(data)}
}

// A zip is hashed only when OpenTofu's unpacker (go-getter's
// ZipDecompressor over archive/zip) would unpack it, the same way on every
// system: anything else is an error naming the problem, never an h1 over
// bytes no unpacker produces.
func TestZipH1RefusesWhatUnpackersRefuse(t *testing.T) {
	for _, c := range []struct {
		name    string
		entries []testenv.ZipEntry
		want    string
	}{
		{"bad CRC", []testenv.ZipEntry{{Name: "terraform-provider-x", Data: []byte("binary"), BadCRC: true}}, "checksum"},
		{"more than declared", []testenv.ZipEntry{{Name: "terraform-provider-x", Data: []byte("binary and more"), DeclaredSize: testenv.Size(6)}}, "zip entry terraform-provider-x"},
		{"less than declared", []testenv.ZipEntry{{Name: "terraform-provider-x", Data: []byte("bin"), DeclaredSize: testenv.Size(6)}}, "zip entry terraform-provider-x"},
		{"empty", nil, "empty"},
		{"directories only", []testenv.ZipEntry{{Name: "d/", Mode: fs.ModeDir | 0o755}}, "no file"},
		{"dot-dot inside", []testenv.ZipEntry{file("a/../b", "x")}, `".."`},
		{"dot-dot outside", []testenv.ZipEntry{file("../b", "x")}, "outside"},
		{"absolute", []testenv.ZipEntry{file("/etc/x", "x")}, "absolute"},
		{"drive letter", []testenv.ZipEntry{file("C:x", "x")}, "absolute"},
		{"backslash", []testenv.ZipEntry{file(`a\b`, "x")}, "backslash"},
		{"NUL", []testenv.ZipEntry{file("a\x00b", "x")}, "NUL"},
		{"twice", []testenv.ZipEntry{file("a", "x"), file("./a", "y")}, "twice"},
		{"file where a directory must be", []testenv.ZipEntry{file("a", "x"), file("a/b", "y")}, "as a directory"},
		{"file and directory entry", []testenv.ZipEntry{file("a", "x"), {Name: "a/", Mode: fs.ModeDir | 0o755}}, "as a directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			zr := reader(t, testenv.CraftZip(t, c.entries...))
			h1, err := pkghash.ZipH1Context(context.Background(), zr)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("h1 %q, error %v; want an error mentioning %q", h1, err, c.want)
			}
		})
	}
}

// ReadEntries, which checks module zips and verify's downloads, reads
// entries as ZipH1Context does.
func TestReadEntriesChecksCRCAndSizes(t *testing.T) {
	for _, e := range []testenv.ZipEntry{
		{Name: "main.tf", Data: []byte("x"), BadCRC: true},
		{Name: "main.tf", Data: []byte("longer"), DeclaredSize: testenv.Size(1)},
		{Name: "main.tf", Data: []byte("x"), DeclaredSize: testenv.Size(10)},
	} {
		if err := pkghash.ReadEntries(context.Background(), reader(t, testenv.CraftZip(t, e))); err == nil || !strings.Contains(err.Error(), "main.tf") {
			t.Errorf("%+v: %v", e, err)
		}
	}
	good := reader(t, testenv.CraftZip(t, file("main.tf", "x"), testenv.ZipEntry{Name: "d/", Mode: fs.ModeDir | 0o755}))
	if err := pkghash.ReadEntries(context.Background(), good); err != nil {
		t.Error(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := pkghash.ReadEntries(ctx, good); err == nil {
		t.Error("read on after its context ended")
	}
}

// A symbolic-link entry unpacks (go-getter) to a regular file holding the
// link's target, and is hashed as one; names are cleaned as unpacking
// cleans them, and directory entries leave no trace.
func TestZipH1AsUnpacked(t *testing.T) {
	h := func(entries ...testenv.ZipEntry) string {
		t.Helper()
		h1, err := pkghash.ZipH1Context(context.Background(), reader(t, testenv.CraftZip(t, entries...)))
		if err != nil {
			t.Fatal(err)
		}
		return h1
	}
	link := h(testenv.ZipEntry{Name: "bin/tool", Data: []byte("../lib/tool"), Mode: fs.ModeSymlink | 0o777}, file("lib/tool", "x"))
	plain := h(file("bin/tool", "../lib/tool"), file("lib/tool", "x"))
	if link != plain {
		t.Errorf("a link entry hashes as %s, its target text as a file as %s", link, plain)
	}
	if a, b := h(file("./a/b", "x"), testenv.ZipEntry{Name: "a/", Mode: fs.ModeDir | 0o755}), h(file("a/b", "x")); a != b {
		t.Errorf("./a/b with a directory entry: %s; a/b: %s", a, b)
	}
}

// FuzzZipH1: no zip makes the hashing panic or hang; what hashes lists
// clean, unique, sorted names that stay inside the directory, and reads
// completely.
func FuzzZipH1(f *testing.F) {
	seeds := [][]testenv.ZipEntry{
		{file("terraform-provider-x", "binary")},
		{file("a/b", "x"), {Name: "a/", Mode: fs.ModeDir | 0o755}, {Name: "l", Data: []byte("a/b"), Mode: fs.ModeSymlink | 0o777}},
		{{Name: "x", Data: []byte("x"), BadCRC: true}},
		{{Name: "x", Data: []byte("xyz"), DeclaredSize: testenv.Size(1)}},
		{file("../x", "x")},
	}
	for _, s := range seeds {
		f.Add(testenv.CraftZip(f, s...))
	}
	if b, err := os.ReadFile(testenv.Testdata(f, "providers", "hello", "1.0.0", "terraform-provider-hello_1.0.0_linux_amd64.zip")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		files, ferr := pkghash.UnpackedFiles(zr)
		h1, err := pkghash.ZipH1Context(context.Background(), zr)
		if err != nil {
			return
		}
		if ferr != nil || !strings.HasPrefix(h1, "h1:") {
			t.Fatalf("h1 %q although UnpackedFiles says %v", h1, ferr)
		}
		names := make([]string, len(files))
		for i, uf := range files {
			n := uf.Name
			if path.Clean(n) != n || path.IsAbs(n) || n == ".." || strings.HasPrefix(n, "../") || strings.ContainsAny(n, "\\\x00") {
				t.Fatalf("unsafe name %q", n)
			}
			names[i] = n
		}
		if !sort.StringsAreSorted(names) {
			t.Fatalf("names not sorted: %q", names)
		}
		if err := pkghash.ReadEntries(context.Background(), zr); err != nil {
			t.Fatalf("hashed, but reading fails: %v", err)
		}
	})
}
