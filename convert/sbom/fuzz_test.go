package sbom

import (
	"archive/zip"
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
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

// FuzzParseSPDX holds ParseSPDX's lean reader to tools-golang's: on any
// input the lean reader takes, both give the same document or both
// fail; neither panics.
func FuzzParseSPDX(f *testing.F) {
	d := &Document{Name: "demo", Version: "1.0.0", Platform: "linux_amd64", FileName: "terraform-provider-demo_1.0.0_linux_amd64.zip",
		ZipDigest: digest.FromString("zip"), Created: time.Unix(0, 0).UTC(),
		Executables: []Executable{{Name: "terraform-provider-demo_v1.0.0", SHA256: digest.FromString("exe").Encoded(), Size: 10, NotGo: "not a Go binary"}}}
	if b, err := d.SPDX(); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"spdxVersion":"SPDX-2.3","SPDXID":"SPDXRef-DOCUMENT","packages":[{"SPDXID":"SPDXRef-P","name":"x"}],"relationships":[{"spdxElementId":"SPDXRef-DOCUMENT","relationshipType":"DESCRIBES","relatedSpdxElement":"SPDXRef-P"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		lean, ok, leanErr := parseLean(b)
		if !ok {
			return
		}
		lib, libErr := parseWithLibrary(b)
		if (leanErr == nil) != (libErr == nil) {
			return // the library checks more (licences, …): agreement is held on what both read
		}
		if leanErr == nil && !reflect.DeepEqual(lean, lib) {
			t.Fatalf("lean %+v\nlibrary %+v", lean, lib)
		}
	})
}
