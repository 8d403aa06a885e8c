package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

const helloConfig = `
terraform {
  required_providers {
    hello = {
      source  = "example.com/test/hello"
      version = "%s"
    }
  }
}
`

// ociMirrorConfig installs example.com providers from host/providers/….
func ociMirrorConfig(host string) string {
	return ociMirrorCLIConfig(host+"/providers/${namespace}/${type}", "example.com/*/*")
}

// ociMirrorCLIConfig is a CLI configuration installing the providers that
// include matches from the repositories template names.
func ociMirrorCLIConfig(template, include string) string {
	return fmt.Sprintf(`
provider_installation {
  oci_mirror {
    repository_template = "%s"
    include             = ["%s"]
  }
}
`, template, include)
}

func fixtureZipSHA(t *testing.T, version, platform string) string {
	t.Helper()
	f, err := os.Open(testenv.Testdata(t, "providers", "hello", version, "terraform-provider-hello_"+version+"_"+platform+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, _, err := pkghash.SHA256(f)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

func readProvenance(t *testing.T, reg *testenv.Registry, repoName, version string) *oci.Provenance {
	t.Helper()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := oci.ParseReference(reg.Host + "/" + repoName)
	repo, err := client.OpenReadOnly(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := names.ParseVersion(version)
	pv, err := oci.ResolveProvider(context.Background(), repo, v)
	if err != nil {
		t.Fatal(err)
	}
	if pv.Provenance == nil {
		t.Fatalf("%s:%s has no provenance manifest", repoName, version)
	}
	p, files, err := oci.ReadProvenance(context.Background(), repo, *pv.Provenance)
	if err != nil {
		t.Fatal(err)
	}
	if files.SHA256SUMS.Data == nil || files.Signature.Data == nil || files.Keys.Data == nil {
		t.Fatalf("provenance lacks SHA256SUMS, signature or keys: %+v", files)
	}
	return p
}

// The packer's output installs with real `tofu init` through oci_mirror, and
// the lock file's hashes are the zip's sha256 and the h1 the packer stored.
func TestPushProviderThenTofuInstallsFromRegistry(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/providers/test/hello"
	out := mustRun(t, "push", "provider", "--json", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"),
		testenv.Testdata(t, "providers", "hello", "1.0.0"), repo)
	var res struct {
		Reference, Digest string
		Platforms         []string
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if res.Reference != repo+":1.0.0" || len(res.Platforms) != 4 {
		t.Fatalf("unexpected result %+v", res)
	}

	tofu := testenv.Tofu(t, ociMirrorConfig(reg.Host))
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "~> 1.0")})
	tofu.Run(t, dir, "init", "-input=false", "-no-color")

	lock, err := lockfile.Read(filepath.Join(dir, ".terraform.lock.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	entry := lock.Provider("example.com/test/hello")
	if entry == nil || entry.Version != "1.0.0" {
		t.Fatalf("lock file has no hello 1.0.0: %+v", lock.Providers)
	}
	zh := "zh:" + fixtureZipSHA(t, "1.0.0", "linux_amd64")
	prov := readProvenance(t, reg, "providers/test/hello", "1.0.0")
	h1 := prov.Platforms["linux_amd64"].H1
	if !slices.Contains(entry.Hashes, zh) {
		t.Errorf("lock hashes %v lack %s (the zip's sha256 = its OCI layer digest)", entry.Hashes, zh)
	}
	if !slices.Contains(entry.Hashes, h1) {
		t.Errorf("lock hashes %v lack the packer's stored h1 %s", entry.Hashes, h1)
	}
	if prov.Protocols[0] != "6.0" || prov.SigningKeyIDs[0] == "" {
		t.Errorf("provenance: %+v", prov)
	}
}

// Reproducible and idempotent: the same release gives the same index digest
// in any repository, and a re-push uploads nothing.
func TestPushProviderReproducibleAndIdempotent(t *testing.T) {
	reg := testenv.StartRegistry(t)
	key := testenv.Testdata(t, "keys", "gpg-signer.asc")
	dir := testenv.Testdata(t, "providers", "hello", "1.1.0")
	digest := func(out string) string {
		var r struct {
			Digest   string
			UpToDate bool `json:"up_to_date"`
			Uploaded int
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return fmt.Sprintf("%s uptodate=%v uploaded=%d", r.Digest, r.UpToDate, r.Uploaded)
	}
	first := digest(mustRun(t, "push", "provider", "--json", "--key", key, dir, reg.Host+"/a/hello"))
	again := digest(mustRun(t, "push", "provider", "--json", "--key", key, dir, reg.Host+"/a/hello"))
	other := digest(mustRun(t, "push", "provider", "--json", "--key", key, dir, reg.Host+"/b/hello"))
	layout := digest(mustRun(t, "push", "provider", "--json", "--key", key, dir, "oci-layout:"+t.TempDir()))
	d := strings.Fields(first)[0]
	if !strings.HasPrefix(again, d+" uptodate=true uploaded=0") {
		t.Errorf("re-push: %s, first: %s", again, first)
	}
	if !strings.HasPrefix(other, d) || !strings.HasPrefix(layout, d) {
		t.Errorf("digests differ between repositories: %s / %s / %s", first, other, layout)
	}
	// Another repository of the same registry: the blobs could be mounted,
	// but at least no tag may differ. A re-tag of an existing release into a
	// new repo must still upload the manifests.
	if strings.Contains(other, "uploaded=0") {
		t.Errorf("push to a new repository uploaded nothing: %s", other)
	}
}

// Bad input is refused before anything is written: no tag appears.
func TestPushProviderRefusesBadReleases(t *testing.T) {
	reg := testenv.StartRegistry(t)
	good := testenv.Testdata(t, "providers", "hello", "1.0.0")
	gpgKey := testenv.Testdata(t, "keys", "gpg-signer.asc")
	cases := []struct {
		name, want string
		key        string
		mutate     func(dir string)
	}{
		{"tampered zip", "does not match", gpgKey, func(dir string) {
			appendTo(t, filepath.Join(dir, "terraform-provider-hello_1.0.0_linux_amd64.zip"), "x")
		}},
		{"wrong key", "signature does not verify", testenv.Testdata(t, "keys", "other.asc"), nil},
		{"tampered SHA256SUMS", "signature does not verify", gpgKey, func(dir string) {
			appendTo(t, filepath.Join(dir, "terraform-provider-hello_1.0.0_SHA256SUMS"), "\n")
		}},
		{"missing SHA256SUMS line", "not listed in", gpgKey, func(dir string) {
			copyFile(t, filepath.Join(dir, "terraform-provider-hello_1.0.0_linux_amd64.zip"), filepath.Join(dir, "terraform-provider-hello_1.0.0_freebsd_amd64.zip"))
		}},
		{"missing platform", "use --platform to push only the platforms", gpgKey, func(dir string) {
			os.Remove(filepath.Join(dir, "terraform-provider-hello_1.0.0_darwin_arm64.zip"))
		}},
		{"two versions", "more than one provider release", gpgKey, func(dir string) {
			copyFile(t, filepath.Join(dir, "terraform-provider-hello_1.0.0_linux_amd64.zip"), filepath.Join(dir, "terraform-provider-hello_1.0.1_linux_amd64.zip"))
		}},
		{"bad version", "invalid version", gpgKey, func(dir string) {
			copyFile(t, filepath.Join(dir, "terraform-provider-hello_1.0.0_linux_amd64.zip"), filepath.Join(dir, "terraform-provider-hello_v1.0.0_linux_amd64.zip"))
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDir(t, good)
			if tc.mutate != nil {
				tc.mutate(dir)
			}
			repo := fmt.Sprintf("%s/bad/case%d", reg.Host, i)
			out, err := run(t, "push", "provider", "--key", tc.key, dir, repo)
			if err == nil || !strings.Contains(out, tc.want) {
				t.Fatalf("want failure mentioning %q, got err=%v:\n%s", tc.want, err, out)
			}
			assertNoTags(t, reg, repo)
		})
	}
}

func assertNoTags(t *testing.T, reg *testenv.Registry, repo string) {
	t.Helper()
	client, _ := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	ref, _ := oci.ParseReference(repo)
	r, err := client.OpenReadOnly(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	list, err := oci.ListVersions(context.Background(), r)
	if err != nil && !oci.IsNotFound(err) {
		t.Fatal(err)
	}
	if len(list) > 0 {
		t.Fatalf("%s has tags %v after a refused push", repo, list)
	}
}

func appendTo(t *testing.T, path, s string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(s)
	f.Close()
}

func copyFile(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, from string) string {
	to := t.TempDir()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		copyFile(t, filepath.Join(from, e.Name()), filepath.Join(to, e.Name()))
	}
	return to
}
