package pkghash

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"golang.org/x/mod/sumdb/dirhash"
)

// Values written by real OpenTofu 1.12.6 (`tofu providers lock
// -fs-mirror=… -platform=…`) into .terraform.lock.hcl for the fixtures.
var tofuH1 = map[string]string{
	"linux_amd64":   "h1:YDgciloEGKGccmi56RCqsCo6+Elj5PUGjKryiTEFMPI=",
	"linux_arm64":   "h1:Gqb+r2Z7L/A7wNE2rt5NqNOieALKxpFG0MOicJNOH6A=",
	"darwin_arm64":  "h1:1ODriPCQ6mf8IQo9GrhckYOgsRHjs55CcOxhDdMmreU=",
	"windows_amd64": "h1:N9b0+3OUvoGNeovClAlidKetBPZI0QBlxWoQAHy6tvc=",
}

func TestHashZipH1MatchesTofu(t *testing.T) {
	for platform, want := range tofuH1 {
		zipPath := testenv.Testdata(t, "providers", "hello", "1.0.0", "terraform-provider-hello_1.0.0_"+platform+".zip")
		got, err := ZipFileH1(zipPath)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: h1 %s, tofu wrote %s", platform, got, want)
		}
		// The fixtures hold directory entries, so hashing the zip as it is
		// (dirhash.HashZip) gives another value: the trap docs/reference.md §3 names.
		if naive, _ := dirhash.HashZip(zipPath, dirhash.Hash1); naive == want {
			t.Errorf("%s: fixture has no directory entries; the test would not catch the difference", platform)
		}
	}
}

func TestHashZipH1RefusesEscapingNames(t *testing.T) {
	for _, name := range []string{"../evil", "/abs", "a/../../b"} {
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		w, _ := zw.Create(name)
		w.Write([]byte("x"))
		zw.Close()
		zr, _ := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		if _, err := ZipH1(zr); err == nil || !strings.Contains(err.Error(), "outside") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestHashZipFileH1RefusesNonZip(t *testing.T) {
	if _, err := ZipFileH1(testenv.Testdata(t, "keys", "gpg-signer.asc")); err == nil || !strings.Contains(err.Error(), "not a readable zip") {
		t.Fatal(err)
	}
}

// ZipH1Sums is dirhash's Hash1 over the unpacked files, and its sums are
// the files' sha256.
func TestZipH1SumsIsHash1(t *testing.T) {
	for _, platform := range []string{"linux_amd64", "windows_amd64"} {
		zipPath := testenv.Testdata(t, "providers", "hello", "1.0.0", "terraform-provider-hello_1.0.0_"+platform+".zip")
		zr, err := zip.OpenReader(zipPath)
		if err != nil {
			t.Fatal(err)
		}
		defer zr.Close()
		files, err := UnpackedFiles(&zr.Reader)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		byName := map[string]*zip.File{}
		for _, f := range files {
			names = append(names, f.Name)
			byName[f.Name] = f.File
		}
		want, err := dirhash.Hash1(names, func(name string) (io.ReadCloser, error) { return byName[name].Open() })
		if err != nil {
			t.Fatal(err)
		}
		got, sums, err := ZipFileH1Sums(context.Background(), zipPath)
		if err != nil || got != want || len(sums) != len(files) {
			t.Fatalf("%s: %s %v %v, want %s", platform, got, sums, err, want)
		}
		for _, f := range files {
			r, _ := f.File.Open()
			b, _ := io.ReadAll(r)
			r.Close()
			if sum := sha256.Sum256(b); sums[f.File.Name] != hex.EncodeToString(sum[:]) {
				t.Errorf("%s %s: sum %s", platform, f.Name, sums[f.File.Name])
			}
		}
	}
}
