package pkghash

import (
	"archive/zip"
	"bytes"
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
