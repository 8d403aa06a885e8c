package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opentofu/tofudl"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// pathsPolicy allows providers from 1.0 on but denies 2.0.0, denies the
// greeting module's 1.2.0 and OpenTofu 1.9.0.
const pathsPolicy = `
provider "*/*/*" {
  name     = "widgets-policy"
  versions = ">= 1.0"
  deny     = ["2.0.0"]
}
module "*/acme/greeting/aws" {
  name = "greeting-policy"
  deny = ["1.2.0"]
}
tofu {
  name = "tofu-policy"
  deny = ["1.9.0"]
}
`

func writePathsPolicy(t *testing.T) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(file, []byte(pathsPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// signedProviderDir is a release directory of typ at version (the
// generated platforms), signed with the go-crypto fixture key, whose
// public key is testdata/keys/gocrypto-signer.asc.
func signedProviderDir(t *testing.T, typ, version string) string {
	t.Helper()
	dir := t.TempDir()
	sums, err := writeRelease(dir, typ, version, genPlatforms)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := signer.Sign(sums, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "terraform-provider-"+typ+"_"+version+"_SHA256SUMS.sig"), sig, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// widgetsConfig requires addr at constraint.
func widgetsConfig(addr, constraint string) string {
	return fmt.Sprintf(`
terraform {
  required_providers {
    widgets = {
      source  = "%s"
      version = "%s"
    }
  }
}
`, addr, constraint)
}

// installsAllowedWidgets requires real tofu and terraform, through the
// network mirror (example.com/acme/widgets) and through the registry
// protocol (the proxy's host), to install 1.9.1 of acme/widgets under
// ">= 1.0", 2.0.0 being denied; tofu prints why through the registry
// protocol.
func installsAllowedWidgets(t *testing.T, s *served) {
	t.Helper()
	routes := []struct{ name, addr, cliConfig string }{
		{"network mirror", "example.com/acme/widgets", networkMirrorConfig(s)},
		{"registry protocol", s.Host + "/acme/widgets", ""},
	}
	for _, r := range routes {
		for _, c := range clis {
			t.Run(c.name+" "+r.name, func(t *testing.T) {
				cli := c.new(t, r.cliConfig)
				dir := testenv.WriteConfig(t, map[string]string{"main.tf": widgetsConfig(r.addr, ">= 1.0")})
				out := cli.Run(t, dir, "init", "-input=false", "-no-color")
				if !strings.Contains(out, "Installed "+r.addr+" v1.9.1") {
					t.Fatalf("1.9.1 not installed:\n%s", out)
				}
				why := `2.0.0 is left out: localhost/acme/widgets 2.0.0 is denied by the policy's rule "widgets-policy"`
				if c.name == "tofu" && r.name == "registry protocol" && !strings.Contains(strings.Join(strings.Fields(out), " "), why) {
					t.Errorf("tofu did not print why 2.0.0 is left out:\n%s", out)
				}
			})
		}
	}
}

// The policy on every path for a provider with 1.9.1 and 2.0.0, 2.0.0
// denied: push refuses 2.0.0 naming the rule before uploading anything
// (--policy-warn pushes it with a warning); verify reports the decision
// per version; real tofu and terraform install 1.9.1 from the proxy
// holding both, through the network mirror and the registry protocol;
// `oci-tofu lock --policy` writes the lock `tofu providers lock` writes
// through the proxy (version and hashes), where it would lock 2.0.0
// without the policy.
func TestPolicyProviderPaths(t *testing.T) {
	pol := writePathsPolicy(t)
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/providers/acme/widgets"
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	d191, d200 := signedProviderDir(t, "widgets", "1.9.1"), signedProviderDir(t, "widgets", "2.0.0")
	mustRun(t, "push", "provider", "--quiet", "--key", key, "--policy", pol, d191, repo)

	layout := filepath.Join(t.TempDir(), "layout")
	for _, target := range []string{repo, "oci-layout:" + layout + "/acme/widgets"} {
		out, err := run(t, "push", "provider", "--key", key, "--policy", pol, d200, target)
		if err == nil || !strings.Contains(out, `the policy's rule "widgets-policy" denies provider registry.opentofu.org/acme/widgets 2.0.0`) || !strings.Contains(out, "--policy-warn") {
			t.Errorf("push of the denied 2.0.0 to %s: %v\n%s", target, err, out)
		}
	}
	if d := tagDigest(t, reg, "providers/acme/widgets", "2.0.0"); d != "" {
		t.Errorf("the refused 2.0.0 was tagged: %s", d)
	}
	if _, err := os.Stat(layout); !os.IsNotExist(err) {
		t.Errorf("the refused push wrote to the layout: %v", err)
	}
	out := mustRun(t, "push", "provider", "--key", key, "--policy", pol, "--policy-warn", d200, repo)
	if !strings.Contains(out, `warning: registry.opentofu.org/acme/widgets 2.0.0: pushed although the policy's rule "widgets-policy" denies`) {
		t.Errorf("push --policy-warn printed no warning naming the rule:\n%s", out)
	}

	out, err := run(t, "verify", "--skip-zips", "--policy", pol, repo)
	if err == nil || !strings.Contains(out, `error   `+repo+`:2.0.0: policy: denied by rule "widgets-policy"`) ||
		!strings.Contains(out, `ok      `+repo+`:1.9.1: policy: allowed by rule "widgets-policy"`) {
		t.Errorf("verify --policy: %v\n%s", err, out)
	}

	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}", "--policy", pol)
	installsAllowedWidgets(t, s)

	t.Run("lock", func(t *testing.T) {
		cfg := map[string]string{"main.tf": widgetsConfig(s.Host+"/acme/widgets", ">= 1.0")}
		ours, plain, theirs := testenv.WriteConfig(t, cfg), testenv.WriteConfig(t, cfg), testenv.WriteConfig(t, cfg)
		lockArgs := []string{"lock", "--quiet", "--provider-template", reg.Host + "/providers/${namespace}/${type}", "--platform", "linux_amd64", "--platform", "darwin_arm64"}
		mustRun(t, append(lockArgs, "--policy", pol, ours)...)
		mustRun(t, append(lockArgs, plain)...)
		testenv.Tofu(t, "").Run(t, theirs, "providers", "lock", "-platform=linux_amd64", "-platform=darwin_arm64", "-no-color")
		addr := s.Host + "/acme/widgets"
		lockEntry(t, plain, addr, "2.0.0") // without the policy: the newest
		o, c := lockEntry(t, ours, addr, "1.9.1"), lockEntry(t, theirs, addr, "1.9.1")
		if oh, ch := lockfile.SortedUnique(o.Hashes), lockfile.SortedUnique(c.Hashes); !slices.Equal(oh, ch) {
			t.Errorf("hashes differ:\noci-tofu lock --policy: %v\ntofu providers lock:    %v", oh, ch)
		}
	})
}

// With pull-through, the same policy: tofu and terraform install 1.9.1
// through both routes, the origin is never asked about 2.0.0 (listing it
// aside), a direct request for it is 404 naming the rule; `oci-tofu
// mirror --policy` mirrors 1.9.1 and reports 2.0.0 denied without
// downloading it.
func TestPolicyPullThroughProviders(t *testing.T) {
	pol := writePathsPolicy(t)
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{
		{Namespace: "acme", Type: "widgets", Dir: signedProviderDir(t, "widgets", "1.9.1"), Key: key},
		{Namespace: "acme", Type: "widgets", Dir: signedProviderDir(t, "widgets", "2.0.0"), Key: key},
	})
	reg := testenv.StartRegistry(t)
	s := startServe(t, pullThroughArgs(reg, origin, "--policy", pol)...)
	installsAllowedWidgets(t, s)
	code, body := s.get(t, "/v1/mirror/example.com/acme/widgets/2.0.0.json")
	if code != 404 || !strings.Contains(string(body), `example.com/acme/widgets 2.0.0 is denied by the policy's rule \"widgets-policy\"`) {
		t.Errorf("2.0.0.json: %d %s", code, body)
	}
	asked := func() int { return origin.Count(func(p string) bool { return strings.Contains(p, "2.0.0") }) }
	if n := asked(); n != 0 {
		t.Errorf("the origin was asked %d times about the denied 2.0.0", n)
	}

	out := mustRun(t, "mirror", "--policy", pol, "--provider-template", reg.Host+"/mirrored/${namespace}/${type}", origin.Host+"/acme/widgets@>= 1.0")
	if !strings.Contains(out, "denied   "+origin.Host+"/acme/widgets 2.0.0: the policy's rule \"widgets-policy\"") || !strings.Contains(out, "mirrored "+origin.Host+"/acme/widgets 1.9.1") {
		t.Errorf("mirror --policy:\n%s", out)
	}
	if d := tagDigest(t, reg, "mirrored/acme/widgets", "2.0.0"); d != "" || asked() != 0 {
		t.Errorf("mirror took the denied 2.0.0 (tag %q, %d origin requests)", d, asked())
	}
}

// The policy for modules: push refuses the denied 1.2.0 before packing
// (--policy-warn pushes it), verify reports it, and real tofu and
// terraform resolve ~> 1.0 to the newest allowed, 1.1.0, through the
// module registry protocol.
func TestPolicyModulePaths(t *testing.T) {
	isolateCache(t)
	pol := writePathsPolicy(t)
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/modules/acme/greeting/aws"
	pushGreetingVersions(t, repo, "1.0.0", "1.1.0")
	src := testenv.Testdata(t, "modules", "greeting")
	out, err := run(t, "push", "module", "--policy", pol, src, repo+":1.2.0")
	if err == nil || !strings.Contains(out, `the policy's rule "greeting-policy" denies module registry.opentofu.org/acme/greeting/aws 1.2.0`) {
		t.Errorf("push module of the denied 1.2.0: %v\n%s", err, out)
	}
	if d := tagDigest(t, reg, "modules/acme/greeting/aws", "1.2.0"); d != "" {
		t.Fatalf("the refused 1.2.0 was tagged: %s", d)
	}
	mustRun(t, "push", "module", "--quiet", "--policy", pol, "--policy-warn", src, repo+":1.2.0")
	out, err = run(t, "verify", "--skip-zips", "--policy", pol, repo)
	if err == nil || !strings.Contains(out, `error   `+repo+`:1.2.0: policy: denied by rule "greeting-policy"`) {
		t.Errorf("verify --policy: %v\n%s", err, out)
	}

	s := startServe(t, "--module-template", reg.Host+"/modules/${namespace}/${name}/${system}", "--policy", pol)
	host := moduleHost(s)
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(`
module "pick" {
  source  = "%s/acme/greeting/aws"
  version = "~> 1.0"
  name    = "policy"
}
`, host)})
			out := c.new(t, "").Run(t, dir, "init", "-input=false", "-no-color", "-backend=false")
			main, err := os.ReadFile(filepath.Join(dir, ".terraform", "modules", "pick", "main.tf"))
			if err != nil || !strings.Contains(string(main), "Hello from 1.1.0, ") {
				t.Errorf("installed main.tf is not 1.1.0's: %v\n%s\n%s", err, main, out)
			}
		})
	}
}

// apiIDs lists the versions a TofuDL mirror's api.json offers, through
// the reference client.
func apiIDs(t *testing.T, dl tofudl.Downloader) []string {
	t.Helper()
	list, err := dl.ListVersions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range list {
		ids = append(ids, string(v.ID))
	}
	return ids
}

// latestStable is the binary tofudl downloads as the latest stable
// release for linux_amd64.
func latestStable(t *testing.T, dl tofudl.Downloader) []byte {
	t.Helper()
	bin, err := dl.Download(context.Background(), tofudl.DownloadOptMinimumStability(tofudl.StabilityStable),
		tofudl.DownloadOptPlatform(tofudl.PlatformLinux), tofudl.DownloadOptArchitecture(tofudl.ArchitectureAMD64))
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// The policy for OpenTofu releases, with 1.9.0 denied: push tofu refuses
// it; the TofuDL mirror's api.json lacks it, held or pulled through, so
// tofudl's latest stable is 1.8.0; its files are 404 naming the rule and
// pull-through never asks the origin for them; mirror reports it denied.
func TestPolicyTofuPaths(t *testing.T) {
	pol := writePathsPolicy(t)
	gpgKey := testenv.Testdata(t, "keys", "gpg-signer.asc")
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/tools/opentofu"
	pushTofu(t, repo, "1.8.0", "1.10.0-beta1")
	out, err := run(t, "push", "tofu", "--key", gpgKey, "--policy", pol, testenv.Testdata(t, "tofu", "1.9.0"), repo)
	if err == nil || !strings.Contains(out, `the policy's rule "tofu-policy" denies OpenTofu 1.9.0`) || tagDigest(t, reg, "tools/opentofu", "1.9.0") != "" {
		t.Errorf("push tofu of the denied 1.9.0: %v\n%s", err, out)
	}
	mustRun(t, "push", "tofu", "--quiet", "--key", gpgKey, "--policy", pol, "--policy-warn", testenv.Testdata(t, "tofu", "1.9.0"), repo)

	want := []string{"1.10.0-beta1", "1.8.0"}
	const denied = `OpenTofu 1.9.0 is not served: tofu 1.9.0 is denied by the policy's rule \"tofu-policy\"`
	t.Run("held", func(t *testing.T) {
		s := startServe(t, "--tofu-repository", repo, "--policy", pol)
		dl := newTofuDL(t, s)
		if ids := apiIDs(t, dl); !slices.Equal(ids, want) {
			t.Errorf("api.json lists %v, want %v", ids, want)
		}
		if bin := latestStable(t, dl); !bytes.Equal(bin, tofuBinary(t, "1.8.0", "linux_amd64")) {
			t.Errorf("latest stable is not 1.8.0: %q", bin)
		}
		if code, body := s.get(t, "/tofu/download/v1.9.0/tofu_1.9.0_linux_amd64.tar.gz"); code != 404 || !strings.Contains(string(body), denied) {
			t.Errorf("1.9.0's archive: %d %s", code, body)
		}
	})
	t.Run("pull-through", func(t *testing.T) {
		origin := startTofuOrigin(t)
		s := startServe(t, append(tofuPullArgs(origin, reg.Host+"/pulled/opentofu", gpgKey), "--policy", pol)...)
		dl := newTofuDL(t, s)
		if ids := apiIDs(t, dl); !slices.Equal(ids, want) {
			t.Errorf("api.json lists %v, want %v", ids, want)
		}
		if bin := latestStable(t, dl); !bytes.Equal(bin, tofuBinary(t, "1.8.0", "linux_amd64")) {
			t.Errorf("latest stable is not 1.8.0: %q", bin)
		}
		for _, f := range []string{"tofu_1.9.0_SHA256SUMS", "tofu_1.9.0_linux_amd64.tar.gz"} {
			if code, body := s.get(t, "/tofu/download/v1.9.0/"+f); code != 404 || !strings.Contains(string(body), denied) {
				t.Errorf("1.9.0's %s: %d %s", f, code, body)
			}
		}
		asked := func() int { return origin.Count(func(p string) bool { return strings.Contains(p, "1.9.0") }) }
		if n := asked(); n != 0 {
			t.Errorf("the origin was asked %d times about the denied 1.9.0", n)
		}
		out := mustRun(t, "mirror", "--policy", pol, "--tofu-repository", reg.Host+"/mirrored/opentofu", "--tofu-api-url", origin.APIURL(),
			"--tofu-download-url", origin.DownloadTemplate(), "--tofu-key", gpgKey, "--tofu-versions", ">= 1.8.0")
		if !strings.Contains(out, `denied   opentofu 1.9.0: the policy's rule "tofu-policy"`) || !strings.Contains(out, "mirrored opentofu 1.8.0") {
			t.Errorf("mirror --policy:\n%s", out)
		}
		if d := tagDigest(t, reg, "mirrored/opentofu", "1.9.0"); d != "" || asked() != 0 {
			t.Errorf("mirror took the denied 1.9.0 (tag %q, %d origin requests)", d, asked())
		}
	})
}
