package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// trustAllHashesConfig is the network mirror block of docs/lockfiles.md:
// OpenTofu ≥ 1.12 records every platform's hashes the mirror reports.
func trustAllHashesConfig(s *served) string {
	return fmt.Sprintf(`
provider_installation {
  network_mirror {
    url              = "%s/v1/mirror/"
    trust_all_hashes = true
  }
}
`, s.URL)
}

// A plain `tofu init` through the proxy's network mirror with
// trust_all_hashes writes every served platform's h1 and zh: the h1s
// `oci-tofu lock` writes for those platforms, and the zh of each of their
// packages (oci-tofu lock adds the zh of every other SHA256SUMS line, the
// release manifest's, as tofu does from a registry). Without the block
// tofu records only the platform it installed. It holds for providers on
// registry.opentofu.org: for other hosts tofu requires a signature and
// records only signed hashes (internal/providercache/installer.go).
func TestNetworkMirrorTrustAllHashesWritesCompleteLocks(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0", "1.1.0")
	tpl := reg.Host + "/providers/${namespace}/${type}"
	s := startServe(t, "--provider-template", tpl)
	cfg := strings.Replace(fmt.Sprintf(helloConfig, "~> 1.0"), "example.com/test/hello", "test/hello", 1)
	const addr = "registry.opentofu.org/test/hello"

	locked := testenv.WriteConfig(t, map[string]string{"main.tf": cfg})
	args := []string{"lock", "--provider-template", tpl}
	for _, p := range []string{"linux_amd64", "linux_arm64", "darwin_arm64", "windows_amd64"} {
		args = append(args, "--platform", p)
	}
	mustRun(t, append(args, locked)...)
	want := lockEntry(t, locked, addr, "1.1.0").Hashes

	dir := testenv.WriteConfig(t, map[string]string{"main.tf": cfg})
	testenv.Tofu(t, trustAllHashesConfig(s)).Run(t, dir, "init", "-input=false", "-no-color")
	got := lockEntry(t, dir, addr, "1.1.0").Hashes
	h1s := fixtureH1s(t, "1.1.0")
	if !slices.Equal(sorted(byScheme(got, "h1:")), sorted(byScheme(want, "h1:"))) || len(byScheme(got, "h1:")) != len(h1s) {
		t.Errorf("h1: tofu init wrote %v, oci-tofu lock %v", byScheme(got, "h1:"), byScheme(want, "h1:"))
	}
	var zhs []string
	for _, p := range []string{"linux_amd64", "linux_arm64", "darwin_arm64", "windows_amd64"} {
		zhs = append(zhs, "zh:"+fixtureZipSHA(t, "1.1.0", p))
	}
	if !slices.Equal(sorted(byScheme(got, "zh:")), sorted(zhs)) {
		t.Errorf("zh: tofu init wrote %v, want each platform's package %v", byScheme(got, "zh:"), zhs)
	}
	for _, zh := range zhs {
		if !slices.Contains(want, zh) {
			t.Errorf("oci-tofu lock lacks %s: %v", zh, want)
		}
	}

	// Without the block: the installed platform only.
	plain := testenv.WriteConfig(t, map[string]string{"main.tf": cfg})
	testenv.Tofu(t, networkMirrorConfig(s)).Run(t, plain, "init", "-input=false", "-no-color")
	if only := lockEntry(t, plain, addr, "1.1.0").Hashes; len(only) != 2 {
		t.Errorf("without trust_all_hashes tofu wrote %v, want the installed platform's h1 and zh", only)
	}
}

// byScheme are the hashes of one scheme ("h1:", "zh:").
func byScheme(hashes []string, scheme string) []string {
	var out []string
	for _, h := range hashes {
		if strings.HasPrefix(h, scheme) {
			out = append(out, h)
		}
	}
	return out
}
