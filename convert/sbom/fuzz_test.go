package sbom

import (
	"archive/zip"
	"bytes"
	"reflect"
	"testing"
)

// FromZip never panics and stays bounded on any zip; what it accepts
// writes SPDX that ParseSPDX reads back as the same document.
func FuzzFromZip(f *testing.F) {
	elf := fakeELF("go1.22.1", fakeMod, -1)
	f.Add(makeZip(f, zipFile{"terraform-provider-demo_v1.0.0", elf}, zipFile{"LICENSE", []byte("MIT")}))
	f.Add(makeZip(f, zipFile{"terraform-provider-demo_v1.0.0", fakeELF("go1.22.1", fakeMod, 50<<20)}))
	f.Add(makeZip(f, zipFile{"terraform-provider-demo_v1.0.0", fakeELF("go1.22.1", "path\tx\x00\n", -1)}))
	f.Add(makeZip(f, zipFile{"a", elf}, zipFile{"b/c.exe", append([]byte("MZ"), elf[2:]...)}, zipFile{"d/", nil}))
	f.Add(makeZip(f, zipFile{"terraform-provider-demo_v1.0.0", []byte("#!/bin/sh\n")}))
	f.Add(makeZip(f, zipFile{"README.md", []byte("# demo\n")}))
	var stored bytes.Buffer
	w := zip.NewWriter(&stored)
	fw, _ := w.CreateRaw(&zip.FileHeader{Name: "terraform-provider-demo_v1.0.0", Method: zip.Store, UncompressedSize64: 2 << 30, CompressedSize64: 4})
	fw.Write([]byte("\x7fELF"))
	w.Close()
	f.Add(stored.Bytes())
	f.Fuzz(func(t *testing.T, z []byte) {
		d, err := FromZip(bytes.NewReader(z), int64(len(z)), demoOptions("linux_amd64"))
		if err != nil {
			return
		}
		if len(d.Executables) == 0 {
			t.Fatal("a document without executables")
		}
		b, err := d.SPDX()
		if err != nil {
			t.Fatalf("SPDX: %v", err)
		}
		back, err := ParseSPDX(b)
		if err != nil {
			t.Fatalf("ParseSPDX: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(back, d) {
			t.Fatalf("ParseSPDX reads back\n%+v\nnot\n%+v", back, d)
		}
	})
}
