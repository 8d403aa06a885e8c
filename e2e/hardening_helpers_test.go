package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// Helpers of the hardening suites (faults, hostile input, signals, races,
// load): content written straight into a registry's storage, and the
// proxy's process figures read from /proc.

// storeManifest writes a manifest or index straight into a Distribution
// registry's filesystem storage under tags, as if pushed, without the
// registry validating it (an index whose manifests are missing, thousands
// of tags in no time). Distribution reads its storage on every request, so
// the registry serves it at once.
func storeManifest(t *testing.T, reg *testenv.Registry, repo string, body []byte, tags ...string) digest.Digest {
	t.Helper()
	d := digest.FromBytes(body)
	root := filepath.Join(reg.Storage, "docker", "registry", "v2")
	write := func(p string, b []byte) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hexd := d.Encoded()
	write(filepath.Join(root, "blobs", "sha256", hexd[:2], hexd, "data"), body)
	manifests := filepath.Join(root, "repositories", repo, "_manifests")
	link := []byte(d.String())
	write(filepath.Join(manifests, "revisions", "sha256", hexd, "link"), link)
	for _, tag := range tags {
		write(filepath.Join(manifests, "tags", tag, "current", "link"), link)
		write(filepath.Join(manifests, "tags", tag, "index", "sha256", hexd, "link"), link)
	}
	return d
}

// randomDigest is the digest of nothing the registry holds.
func randomDigest(t *testing.T) digest.Digest {
	t.Helper()
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return digest.NewDigestFromEncoded(digest.SHA256, hex.EncodeToString(b))
}

// providerIndexOfMissingManifests is a provider index with n platforms
// whose manifests do not exist.
func providerIndexOfMissingManifests(t *testing.T, n int) []byte {
	t.Helper()
	idx := ocispec.Index{ArtifactType: oci.ArtifactTypeProvider, MediaType: ocispec.MediaTypeImageIndex}
	idx.SchemaVersion = 2
	for i := 0; i < n; i++ {
		idx.Manifests = append(idx.Manifests, ocispec.Descriptor{
			MediaType: ocispec.MediaTypeImageManifest, ArtifactType: oci.ArtifactTypeProviderTarget,
			Digest: randomDigest(t), Size: 400,
			Platform: &ocispec.Platform{OS: "linux", Architecture: fmt.Sprintf("arch%d", i)},
		})
	}
	b, err := json.Marshal(idx)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// peakRSS is the most resident memory the process has had, in MiB
// (VmHWM: the kernel's high-water mark, so short peaks count).
func (s *served) peakRSS(t *testing.T) float64 {
	t.Helper()
	return float64(testenv.ProcStatus(t, s.cmd.Process.Pid)["VmHWM"]) / 1024
}

// rss is the process's resident memory now, in MiB.
func (s *served) rss(t *testing.T) float64 {
	t.Helper()
	return float64(testenv.ProcStatus(t, s.cmd.Process.Pid)["VmRSS"]) / 1024
}

// alive fails the test when the proxy process has exited.
func (s *served) alive(t *testing.T) {
	t.Helper()
	select {
	case <-s.done:
		t.Fatalf("oci-tofu serve exited:\n%s", s.logs.String())
	default:
	}
}

// registryRepo opens a repository straight in a test registry, with its
// credentials if it has any (set-up and inspection, not under test).
func registryRepo(t *testing.T, reg *testenv.Registry, name string) oci.Repository {
	t.Helper()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile, Username: reg.Username, Password: reg.Password})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Registry: reg.Host, Repository: name})
	if err != nil {
		t.Fatal(err)
	}
	return repo
}
