package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"oras.land/oras-go/v2"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
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

// A layout written by `push … oci-layout:` is one other tools read: its
// index.json names only the tagged roots, so `crane push DIR` takes a
// one-version layout as it is and keeps its digest; regctl and oras-go
// copy any tag of it; skopeo 1.9 reads it (inspect) but copies an
// OpenTofu index only by rewriting it without its artifactType, which
// OpenTofu then refuses, and refuses to copy it unchanged
// (--preserve-digests). Real tofu installs from crane's copy.
func TestLayoutForOtherTools(t *testing.T) {
	reg := testenv.StartRegistry(t)
	layout := filepath.Join(t.TempDir(), "hello")
	key := testenv.Testdata(t, "keys", "gpg-signer.asc")
	pushed := jsonField(t, mustRun(t, "push", "provider", "--json", "--key", key, testenv.Testdata(t, "providers", "hello", "1.1.0"), "oci-layout:"+layout), "digest")
	if got := layoutIndex(t, layout); len(got) != 1 || got["1.1.0"] != pushed {
		t.Fatalf("index.json names %v, want only 1.1.0 → %s", got, pushed)
	}

	env := append(os.Environ(), "SSL_CERT_FILE="+reg.CA.CertFile, "HOME="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir())
	crane, regctl := testenv.Tool(t, "crane"), testenv.Tool(t, "regctl")
	digestOf := func(ref string) string { return trimSpace(testenv.MustRun(t, "", env, crane, "digest", ref)) }

	t.Run("crane", func(t *testing.T) {
		testenv.MustRun(t, "", env, crane, "push", layout, reg.Host+"/crane/test/hello:1.1.0")
		if got := digestOf(reg.Host + "/crane/test/hello:1.1.0"); got != pushed {
			t.Fatalf("crane push: %s, pushed %s", got, pushed)
		}
		tofu := testenv.Tofu(t, ociMirrorCLIConfig(reg.Host+"/crane/${namespace}/${type}", "example.com/*/*"))
		dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "1.1.0")})
		tofu.Run(t, dir, "init", "-input=false", "-no-color")
	})
	t.Run("regctl", func(t *testing.T) {
		testenv.MustRun(t, "", env, regctl, "image", "copy", "ocidir://"+layout+":1.1.0", reg.Host+"/regctl/test/hello:1.1.0")
		if got := digestOf(reg.Host + "/regctl/test/hello:1.1.0"); got != pushed {
			t.Fatalf("regctl image copy: %s, pushed %s", got, pushed)
		}
	})
	t.Run("oras-go", func(t *testing.T) {
		mustRun(t, "verify", "oci-layout:"+layout+":1.1.0")
		orasCopy(t, reg, "oci-layout:"+layout+":1.1.0", reg.Host+"/oras/test/hello:1.1.0")
		if got := digestOf(reg.Host + "/oras/test/hello:1.1.0"); got != pushed {
			t.Fatalf("oras-go copy: %s, pushed %s", got, pushed)
		}
	})
	t.Run("skopeo", func(t *testing.T) {
		skopeo := func(args ...string) (string, error) {
			return testenv.Run(t, "", env, "skopeo", append([]string{"--insecure-policy"}, args...)...)
		}
		raw, err := skopeo("inspect", "--raw", "oci:"+layout+":1.1.0")
		if err != nil || digestOfBytes(raw) != pushed {
			t.Fatalf("skopeo inspect --raw: %v\n%s", err, raw)
		}
		dest := "docker://" + reg.Host + "/skopeo/test/hello:1.1.0"
		if out, err := skopeo("copy", "--all", "--preserve-digests", "--dest-tls-verify=false", "oci:"+layout+":1.1.0", dest); err == nil || !strings.Contains(out, "preserve digests") {
			t.Errorf("skopeo copy --preserve-digests: %v\n%s", err, out)
		}
		if out, err := skopeo("copy", "--all", "--dest-tls-verify=false", "oci:"+layout+":1.1.0", dest); err != nil {
			t.Fatalf("skopeo copy --all: %v\n%s", err, out)
		}
		copied := testenv.MustRun(t, "", env, crane, "manifest", reg.Host+"/skopeo/test/hello:1.1.0")
		if strings.Contains(copied, "artifactType") {
			t.Errorf("skopeo kept the artifact types (a newer skopeo? update docs/guide-copying.md): %s", copied)
		}
	})

	// A second version: index.json names both tags, and crane (which
	// pushes a layout's only entry) asks for --index.
	mustRun(t, "push", "provider", "--quiet", "--key", key, testenv.Testdata(t, "providers", "hello", "1.0.0"), "oci-layout:"+layout)
	if got := layoutIndex(t, layout); len(got) != 2 || got["1.1.0"] != pushed {
		t.Fatalf("index.json names %v", got)
	}
	if out, err := testenv.Run(t, "", env, crane, "push", layout, reg.Host+"/crane2/test/hello:1.1.0"); err == nil || !strings.Contains(out, "2 entries") {
		t.Errorf("crane push of a two-version layout: %v\n%s", err, out)
	}
	testenv.MustRun(t, "", env, regctl, "image", "copy", "ocidir://"+layout+":1.0.0", reg.Host+"/regctl/test/hello:1.0.0")
}

// layoutIndex reads a layout's index.json as tag → digest; it fails on an
// entry without a tag.
func layoutIndex(t *testing.T, dir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Manifests []struct {
			Digest      string
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range idx.Manifests {
		tag := m.Annotations["org.opencontainers.image.ref.name"]
		if tag == "" {
			t.Fatalf("index.json lists %s without a tag:\n%s", m.Digest, b)
		}
		out[tag] = m.Digest
	}
	return out
}

func digestOfBytes(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}
