package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// OpenTofu releases mirrored from a TofuDL API — here the proxy's own,
// serving another repository — into a registry: verified, filtered by
// platform, incremental; a wrong key fails with nothing tagged.
func TestMirrorTofuReleasesFromTofuDLAPI(t *testing.T) {
	reg := testenv.StartRegistry(t)
	source := reg.Host + "/upstream/tofu"
	pushTofu(t, source, "1.8.0", "1.9.0", "1.10.0-beta1")
	s := startServe(t, "--tofu-repository", source)
	target := reg.Host + "/mirrored/tofu"
	mirror := func(extra ...string) (string, error) {
		args := append([]string{"mirror", "--tofu-repository", target,
			"--tofu-api-url", s.URL + "/tofu/api.json",
			"--tofu-download-url", s.URL + "/tofu/download/v{{ .Version }}/{{ .Artifact }}"}, extra...)
		return run(t, args...)
	}
	key := testenv.Testdata(t, "keys", "gpg-signer.asc")

	out, err := mirror("--tofu-key", testenv.Testdata(t, "keys", "other.asc"))
	if err == nil || !strings.Contains(out, "signature does not verify") {
		t.Fatalf("wrong key: %v\n%s", err, out)
	}
	assertNoTags(t, reg, target)

	// Default: the newest stable only (1.9.0, not the beta).
	if out, err := mirror("--tofu-key", key); err != nil || !strings.Contains(out, "1.9.0") || strings.Contains(out, "1.10.0") {
		t.Fatalf("newest stable: %v\n%s", err, out)
	}
	out, err = mirror("--tofu-key", key, "--tofu-versions", ">= 1.8.0", "--platform", "linux_amd64", "--platform", "darwin_arm64")
	if err == nil || !strings.Contains(out, "different content") {
		t.Fatalf("1.9.0 with fewer files must not replace the complete one: %v\n%s", err, out)
	}
	if !strings.Contains(out, "mirrored opentofu 1.8.0") {
		t.Fatalf("1.8.0 not mirrored:\n%s", out)
	}
	if out, err := mirror("--tofu-key", key, "--tofu-versions", "1.9.0"); err != nil || !strings.Contains(out, "complete opentofu 1.9.0") {
		t.Fatalf("re-run: %v\n%s", err, out)
	}

	client, _ := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	ref, _ := oci.ParseReference(target)
	repo, _ := client.OpenReadOnly(context.Background(), ref)
	d, err := repo.Resolve(context.Background(), "1.8.0")
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := oci.ReadTofuRelease(context.Background(), repo, d)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range cfg.Files {
		names = append(names, f.Name)
	}
	got := strings.Join(names, " ")
	want := "tofu_1.8.0_SHA256SUMS tofu_1.8.0_SHA256SUMS.gpgsig tofu_1.8.0_darwin_arm64.tar.gz tofu_1.8.0_darwin_arm64.zip tofu_1.8.0_linux_amd64.tar.gz tofu_1.8.0_linux_amd64.zip"
	if got != want {
		t.Fatalf("1.8.0 files:\n got %s\nwant %s", got, want)
	}
}
