package release_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Values written by real OpenTofu 1.12.6 (`tofu providers lock
// -fs-mirror=… -platform=…`) into .terraform.lock.hcl for the fixtures.
var tofuH1 = map[string]string{
	"linux_amd64":   "h1:YDgciloEGKGccmi56RCqsCo6+Elj5PUGjKryiTEFMPI=",
	"linux_arm64":   "h1:Gqb+r2Z7L/A7wNE2rt5NqNOieALKxpFG0MOicJNOH6A=",
	"darwin_arm64":  "h1:1ODriPCQ6mf8IQo9GrhckYOgsRHjs55CcOxhDdMmreU=",
	"windows_amd64": "h1:N9b0+3OUvoGNeovClAlidKetBPZI0QBlxWoQAHy6tvc=",
}

func fixture(t *testing.T, elem ...string) string { return testenv.Testdata(t, elem...) }

func mustKeyring(t *testing.T, name string) *pgp.Keyring {
	t.Helper()
	kr, err := pgp.LoadKeyring(fixture(t, "keys", name))
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// copyRelease copies a fixture release directory, to be tampered with.
func copyRelease(t *testing.T, elem ...string) string {
	t.Helper()
	from := fixture(t, elem...)
	to := t.TempDir()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(from, e.Name()))
		os.WriteFile(filepath.Join(to, e.Name()), b, 0o644)
	}
	return to
}
