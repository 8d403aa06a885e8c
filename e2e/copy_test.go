package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"oras.land/oras-go/v2"
)

// A release pushed to an OCI layout, copied into a registry by regctl, then
// between repositories by crane, keeps its digest and its provenance, and
// real tofu installs from each copy.
func TestLayoutThenThirdPartyCopies(t *testing.T) {
	reg := testenv.StartRegistry(t)
	layout := filepath.Join(t.TempDir(), "hello")
	out := mustRun(t, "push", "provider", "--json", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"),
		testenv.Testdata(t, "providers", "hello", "1.1.0"), "oci-layout:"+layout)
	digest := jsonField(t, out, "digest")

	env := append(os.Environ(), "SSL_CERT_FILE="+reg.CA.CertFile, "HOME="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir())
	regctl, crane := testenv.Tool(t, "regctl"), testenv.Tool(t, "crane")
	first := reg.Host + "/providers/test/hello:1.1.0"
	testenv.MustRun(t, "", env, regctl, "image", "copy", "ocidir://"+layout+":1.1.0", first)
	second := reg.Host + "/copied/test/hello:1.1.0"
	testenv.MustRun(t, "", env, crane, "copy", first, second)

	// What `oras cp` runs: oras-go's Copy of the tag's whole graph.
	third := reg.Host + "/oras/test/hello:1.1.0"
	orasCopy(t, reg, first, third)

	for _, ref := range []string{first, second, third} {
		if got := trimSpace(testenv.MustRun(t, "", env, crane, "digest", ref)); got != digest {
			t.Errorf("%s: digest %s, pushed %s", ref, got, digest)
		}
	}
	prov := readProvenance(t, reg, "copied/test/hello", "1.1.0")
	if prov.Platforms["linux_amd64"].H1 == "" {
		t.Fatal("provenance lost h1 in the copy")
	}

	for _, prefix := range []string{"providers", "copied", "oras"} {
		tofu := testenv.Tofu(t, ociMirrorCLIConfig(reg.Host+"/"+prefix+"/${namespace}/${type}", "example.com/*/*"))
		dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "1.1.0")})
		tofu.Run(t, dir, "init", "-input=false", "-no-color")
		lock, err := lockfile.Read(filepath.Join(dir, ".terraform.lock.hcl"))
		if err != nil {
			t.Fatal(err)
		}
		hashes := lock.Provider("example.com/test/hello").Hashes
		if !slices.Contains(hashes, "zh:"+fixtureZipSHA(t, "1.1.0", "linux_amd64")) || !slices.Contains(hashes, prov.Platforms["linux_amd64"].H1) {
			t.Errorf("%s: lock hashes %v", prefix, hashes)
		}
	}
}

func orasCopy(t *testing.T, reg *testenv.Registry, from, to string) {
	t.Helper()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	src, _ := oci.ParseReference(from)
	dst, _ := oci.ParseReference(to)
	s, err := client.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	d, err := client.Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oras.Copy(context.Background(), s, src.Reference, d, dst.Reference, oras.DefaultCopyOptions); err != nil {
		t.Fatal(err)
	}
}
