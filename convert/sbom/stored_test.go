package sbom

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
)

// storedZip zips the files uncompressed.
func storedZip(t testing.TB, files ...zipFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, f := range files {
		fw, err := w.CreateHeader(&zip.FileHeader{Name: f.name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(f.data)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A stored entry, read in place, describes as the same entry deflated
// does; a stored entry whose bytes do not match its CRC-32 is refused as
// archive/zip refuses it; sums the caller gives are taken.
func TestFromZipStoredEntries(t *testing.T) {
	bin := readFile(t, demoBinaries(t)["linux_amd64"])
	files := []zipFile{{"terraform-provider-demo_v1.0.0", bin}, {"LICENSE", []byte("MIT")}, {"fake", fakeELF("go1.22.1", fakeMod, -1)}}
	from := func(z []byte, o Options) (*Document, error) {
		return FromZip(bytes.NewReader(z), int64(len(z)), o)
	}
	deflated, err := from(makeZip(t, files...), demoOptions("linux_amd64"))
	if err != nil {
		t.Fatal(err)
	}
	stored := storedZip(t, files...)
	doc, err := from(stored, demoOptions("linux_amd64"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(doc.Executables, deflated.Executables) || len(doc.Executables) != 2 || doc.Executables[1].Go == nil {
		t.Fatalf("stored %+v\ndeflated %+v", doc.Executables, deflated.Executables)
	}
	sum := sha256.Sum256(bin)
	if doc.Executables[1].SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("sha256 %s", doc.Executables[1].SHA256)
	}

	o := demoOptions("linux_amd64")
	o.SHA256 = map[string]string{"terraform-provider-demo_v1.0.0": "given"}
	for _, z := range [][]byte{stored, makeZip(t, files...)} {
		if doc, err := from(z, o); err != nil || doc.Executables[1].SHA256 != "given" || doc.Executables[0].SHA256 == "given" {
			t.Errorf("%+v %v", doc, err)
		}
	}

	i := bytes.Index(stored, bin[1000:1100])
	bad := bytes.Clone(stored)
	bad[i] ^= 0xff
	if _, err := from(bad, demoOptions("linux_amd64")); !errors.Is(err, zip.ErrChecksum) {
		t.Errorf("a corrupt stored entry: %v", err)
	}
}
