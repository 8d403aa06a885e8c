package modulepkg

import (
	"archive/zip"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// FuzzCheckZip: no zip makes the checks panic, and whatever they accept
// (names, CRCs and sizes, as push module checks a zip) unpacks — as pull
// module does — to exactly the files they listed: nothing is pushed that
// a pull would refuse.
func FuzzCheckZip(f *testing.F) {
	file := func(name, data string) testenv.ZipEntry { return testenv.ZipEntry{Name: name, Data: []byte(data)} }
	for _, s := range [][]testenv.ZipEntry{
		{file("main.tf", "x"), file("modules/a/main.tf", "y")},
		{file("main.tf", "x"), {Name: "modules/", Mode: fs.ModeDir | 0o755}},
		{file("a", "x"), file("a/b", "y")},
		{file("main.tf", "x"), {Name: "l", Data: []byte("main.tf"), Mode: fs.ModeSymlink | 0o777}},
		{{Name: "main.tf", Data: []byte("x"), BadCRC: true}},
		{file("../main.tf", "x")},
	} {
		f.Add(testenv.CraftZip(f, s...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		names, err := CheckZip(zr, 1<<20)
		if err != nil || len(names) == 0 || pkghash.ReadEntries(context.Background(), zr) != nil {
			return
		}
		zf := filepath.Join(t.TempDir(), "m.zip")
		if err := os.WriteFile(zf, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Unpack(zf, filepath.Join(t.TempDir(), "out"), 1<<20)
		if err != nil {
			t.Fatalf("checked (%q) but does not unpack: %v", names, err)
		}
		if !reflect.DeepEqual(got, names) {
			t.Fatalf("checked %q, unpacked %q", names, got)
		}
	})
}
