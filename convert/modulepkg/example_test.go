package modulepkg_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
)

// Pack a module directory into a reproducible zip: the same tree always
// gives the same digest, whatever the files' times and the machine.
func ExamplePack() {
	dir, _ := os.MkdirTemp("", "example-module-")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte("output \"hello\" { value = \"world\" }\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "terraform.tfstate"), []byte("{}"), 0o644) // never packed
	pack := func() *modulepkg.Zip {
		z, err := modulepkg.Pack(context.Background(), dir, modulepkg.Options{})
		if err != nil {
			panic(err)
		}
		defer z.Remove()
		return z
	}
	a := pack()
	later := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(dir, "main.tf"), later, later)
	b := pack()
	fmt.Println(a.Files, a.Digest == b.Digest)
	// Output:
	// [main.tf] true
}
