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

func startHelloOrigin(t *testing.T) *testenv.Origin {
	key := testenv.Testdata(t, "keys", "gpg-signer.asc")
	return testenv.StartOrigin(t, []testenv.OriginRelease{
		{Namespace: "test", Type: "hello", Dir: testenv.Testdata(t, "providers", "hello", "1.0.0"), Key: key},
		{Namespace: "test", Type: "hello", Dir: testenv.Testdata(t, "providers", "hello", "1.1.0"), Key: key},
	})
}

const originConfig = `
terraform {
  required_providers {
    hello = {
      source  = "%s/test/hello"
      version = "%s"
    }
  }
}
`

// tofuProvidersMirror runs real `tofu providers mirror` against the origin.
func tofuProvidersMirror(t *testing.T, origin *testenv.Origin, constraint string, platforms ...string) string {
	out := filepath.Join(t.TempDir(), "mirror")
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(originConfig, origin.Host, constraint)})
	tofu := testenv.Tofu(t, "")
	args := []string{"providers", "mirror"}
	for _, p := range platforms {
		args = append(args, "-platform="+p)
	}
	tofu.Run(t, dir, append(args, out)...)
	return out
}

// Import what real `tofu providers mirror` wrote, install it from the
// registry with tofu; export it again and install from the export as a
// filesystem mirror.
func TestImportProvidersMirrorThenExport(t *testing.T) {
	origin := startHelloOrigin(t)
	reg := testenv.StartRegistry(t)
	mirrorDir := tofuProvidersMirror(t, origin, "1.0.0", "linux_amd64", "darwin_arm64")

	tpl := reg.Host + "/providers/${namespace}/${type}"
	mustRun(t, "push", "mirror", "--provider-template", tpl, mirrorDir)
	// Idempotent.
	if out := mustRun(t, "push", "mirror", "--provider-template", tpl, mirrorDir); !strings.Contains(out, "up to date") {
		t.Errorf("re-import: %s", out)
	}

	// The origin host (localhost:PORT) maps to the registry via the template.
	tofu := testenv.Tofu(t, ociMirrorCLIConfig(tpl, origin.Host+"/*/*"))
	cfg := fmt.Sprintf(originConfig, origin.Host, "1.0.0")
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": cfg})
	tofu.Run(t, dir, "init", "-input=false", "-no-color")
	zh := "zh:" + fixtureZipSHA(t, "1.0.0", "linux_amd64")
	lock, _ := lockfile.Read(filepath.Join(dir, ".terraform.lock.hcl"))
	if !slices.Contains(lock.Provider(origin.Host+"/test/hello").Hashes, zh) {
		t.Fatalf("lock: %+v", lock.Providers)
	}

	// Export and install from it as a filesystem mirror, with no registry.
	exportDir := filepath.Join(t.TempDir(), "export")
	mustRun(t, "export", "--provider-template", tpl, exportDir, origin.Host+"/test/hello@1.0.0")
	vj, err := os.ReadFile(filepath.Join(exportDir, origin.Host, "test", "hello", "1.0.0.json"))
	if err != nil || !strings.Contains(string(vj), zh[3:]) || !strings.Contains(string(vj), "h1:") {
		t.Fatalf("export version.json: %s %v", vj, err)
	}
	reg.Stop()
	fsTofu := testenv.Tofu(t, fmt.Sprintf(`
provider_installation {
  filesystem_mirror {
    path    = "%s"
    include = ["%s/*/*"]
  }
}
`, exportDir, origin.Host))
	dir2 := testenv.WriteConfig(t, map[string]string{"main.tf": cfg})
	fsTofu.Run(t, dir2, "init", "-input=false", "-no-color")
	// From a filesystem mirror tofu records the h1 it computes after
	// unpacking: it must be the one our export lists.
	lock2, _ := lockfile.Read(filepath.Join(dir2, ".terraform.lock.hcl"))
	hashes := lock2.Provider(origin.Host + "/test/hello").Hashes
	if len(hashes) == 0 || !strings.Contains(string(vj), hashes[0]) {
		t.Fatalf("lock from export %v, export lists %s", hashes, vj)
	}
}

// A zip altered after `tofu providers mirror` wrote it is refused, and
// nothing is pushed.
func TestImportRefusesTamperedMirror(t *testing.T) {
	origin := startHelloOrigin(t)
	reg := testenv.StartRegistry(t)
	mirrorDir := tofuProvidersMirror(t, origin, "1.0.0", "linux_amd64")
	zip := filepath.Join(mirrorDir, origin.Host, "test", "hello", "terraform-provider-hello_1.0.0_linux_amd64.zip")
	appendTo(t, zip, "x")
	out, err := run(t, "push", "mirror", "--provider-template", reg.Host+"/providers/${namespace}/${type}", mirrorDir)
	if err == nil || !strings.Contains(out, "does not match the recorded") {
		t.Fatalf("tampered mirror: %v\n%s", err, out)
	}
	assertNoTags(t, reg, reg.Host+"/providers/test/hello")
}
