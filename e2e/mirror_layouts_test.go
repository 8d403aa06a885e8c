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

// `oci-tofu push mirror` imports both layouts docs/cli.md documents, as
// real tofu writes them: the packed layout of `tofu providers mirror`
// (HOST/NS/TYPE/<version>.json beside the zips) and the unpacked layout
// (HOST/NS/TYPE/VERSION/OS_ARCH/, here the .terraform/providers tree
// `tofu init` leaves), side by side in one directory. tofu then installs
// both versions from the registry, with the h1 it computed itself when it
// first installed them.
func TestPushMirrorImportsPackedAndUnpackedLayouts(t *testing.T) {
	origin := startHelloOrigin(t)
	reg := testenv.StartRegistry(t)
	platforms := []string{"linux_amd64", "darwin_arm64"}

	dir := tofuProvidersMirror(t, origin, "1.0.0", platforms...)
	unpacked, h1 := tofuInitProvidersTree(t, origin, "1.1.0")
	typeDir := filepath.Join(origin.Host, "test", "hello")
	if _, err := os.Stat(filepath.Join(dir, typeDir, "1.0.0.json")); err != nil {
		t.Fatalf("tofu providers mirror did not write the packed layout: %v", err)
	}
	// The unpacked version moves beside the packed one.
	if err := os.Rename(filepath.Join(unpacked, typeDir, "1.1.0"), filepath.Join(dir, typeDir, "1.1.0")); err != nil {
		t.Fatal(err)
	}

	tpl := reg.Host + "/providers/${namespace}/${type}"
	out := mustRun(t, "push", "mirror", "--provider-template", tpl, dir)
	for _, want := range []string{origin.Host + "/test/hello 1.0.0", origin.Host + "/test/hello 1.1.0", "imported 2 provider versions"} {
		if !strings.Contains(out, want) {
			t.Errorf("push mirror output lacks %q:\n%s", want, out)
		}
	}
	again := mustRun(t, "push", "mirror", "--provider-template", tpl, dir)
	if strings.Count(again, ", up to date") != 2 || !strings.Contains(again, "2 provider versions already up to date; nothing imported") || strings.Contains(again, "imported 2") {
		t.Errorf("re-import of both layouts is not idempotent, or says it imported what was up to date:\n%s", again)
	}
	mustRun(t, "verify", reg.Host+"/providers/test/hello")

	tofu := testenv.Tofu(t, ociMirrorCLIConfig(tpl, origin.Host+"/*/*"))
	for version, wantHash := range map[string]string{
		"1.0.0": "zh:" + fixtureZipSHA(t, "1.0.0", "linux_amd64"), // the packed zip, byte for byte
		"1.1.0": h1,                                               // repacked: the same files, so tofu's own h1
	} {
		cfg := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(originConfig, origin.Host, version)})
		tofu.Run(t, cfg, "init", "-input=false", "-no-color")
		e := lockEntry(t, cfg, origin.Host+"/test/hello", version)
		if !slices.Contains(e.Hashes, wantHash) {
			t.Errorf("%s installed from the import: lock %v lacks %s", version, e.Hashes, wantHash)
		}
	}
}

// tofuInitProvidersTree installs a version from the origin with real
// `tofu init` and returns its .terraform/providers directory (the unpacked
// layout) and the linux_amd64 h1 tofu recorded.
func tofuInitProvidersTree(t *testing.T, origin *testenv.Origin, version string) (string, string) {
	t.Helper()
	cfg := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(originConfig, origin.Host, version)})
	testenv.Tofu(t, "").Run(t, cfg, "init", "-input=false", "-no-color")
	lock, err := lockfile.Read(filepath.Join(cfg, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	var h1 string
	for _, h := range lock.Provider(origin.Host + "/test/hello").Hashes {
		if strings.HasPrefix(h, "h1:") {
			h1 = h
		}
	}
	tree := filepath.Join(cfg, ".terraform", "providers")
	if _, err := os.Stat(filepath.Join(tree, origin.Host, "test", "hello", version, "linux_amd64")); err != nil || h1 == "" {
		t.Fatalf("tofu init left no unpacked provider (%v) or no h1 (%v)", err, lock.Providers)
	}
	return tree, h1
}
