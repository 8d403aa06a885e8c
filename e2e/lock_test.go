package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// `oci-tofu lock` writes a lock file for several platforms from metadata;
// real `tofu init` accepts it without changing a byte, and its h1 for
// linux_amd64 is what tofu computes itself.
func TestLockAcceptedByTofuUnchanged(t *testing.T) {
	reg := testenv.StartRegistry(t)
	key := testenv.Testdata(t, "keys", "gpg-signer.asc")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		mustRun(t, "push", "provider", "--quiet", "--key", key, testenv.Testdata(t, "providers", "hello", v), reg.Host+"/providers/test/hello")
	}
	tpl := reg.Host + "/providers/${namespace}/${type}"
	cfg := fmt.Sprintf(helloConfig, "~> 1.0")
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": cfg})
	mustRun(t, "lock", "--provider-template", tpl, "--platform", "linux_amd64", "--platform", "darwin_arm64", "--platform", "windows_amd64", dir)
	lockPath := filepath.Join(dir, ".terraform.lock.hcl")
	before, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := lockfile.Read(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	entry := lock.Provider("example.com/test/hello")
	if entry == nil || entry.Version != "1.1.0" || entry.Constraints != "~> 1.0" {
		t.Fatalf("lock entry: %+v", entry)
	}
	h1s := 0
	for _, h := range entry.Hashes {
		if strings.HasPrefix(h, "h1:") {
			h1s++
		}
	}
	// tofu records a zh for every line of the signed SHA256SUMS: the four
	// packages and the release manifest.
	if h1s != 3 || len(entry.Hashes) != 3+5 {
		t.Fatalf("want 3 h1 (one per platform) and 5 zh (every SHA256SUMS line): %v", entry.Hashes)
	}

	tofu := testenv.Tofu(t, ociMirrorConfig(reg.Host))
	tofu.Run(t, dir, "init", "-input=false", "-no-color")
	after, _ := os.ReadFile(lockPath)
	if string(after) != string(before) {
		t.Fatalf("tofu init changed the lock file:\n--- ours\n%s\n--- after tofu init\n%s", before, after)
	}

	// tofu's own h1 for this platform, from a fresh init without our lock.
	fresh := testenv.WriteConfig(t, map[string]string{"main.tf": cfg})
	tofu.Run(t, fresh, "init", "-input=false", "-no-color")
	own, err := lockfile.Read(filepath.Join(fresh, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range own.Provider("example.com/test/hello").Hashes {
		if strings.HasPrefix(h, "h1:") && !slices.Contains(entry.Hashes, h) {
			t.Errorf("tofu computed %s for linux_amd64, our lock lacks it: %v", h, entry.Hashes)
		}
	}

	// An existing lock pins the version: 1.0.0 stays even though 1.1.0 exists.
	pinned := testenv.WriteConfig(t, map[string]string{"main.tf": cfg, ".terraform.lock.hcl": `
provider "example.com/test/hello" {
  version = "1.0.0"
}
`})
	mustRun(t, "lock", "--provider-template", tpl, "--platform", "linux_amd64", pinned)
	pl, _ := lockfile.Read(filepath.Join(pinned, ".terraform.lock.hcl"))
	if v := pl.Provider("example.com/test/hello").Version; v != "1.0.0" {
		t.Fatalf("locked version not kept: %s", v)
	}
	// A platform the release lacks is an error, and the lock file is untouched.
	out, err := run(t, "lock", "--provider-template", tpl, "--platform", "freebsd_arm", dir)
	if err == nil || !strings.Contains(out, "no package for freebsd_arm") {
		t.Fatalf("missing platform: %v\n%s", err, out)
	}
	if after, _ := os.ReadFile(lockPath); string(after) != string(before) {
		t.Fatal("a failed lock run changed the lock file")
	}
}
