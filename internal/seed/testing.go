package seed

import (
	"bytes"
	"context"
	"io"
	"os"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// SignedProvider pushes n versions of a provider into repository name of
// a test registry, signed with the test publisher key, for a test or a
// benchmark (which it fails on error).
func SignedProvider(t testing.TB, reg *testenv.Registry, name string, n int) {
	t.Helper()
	repo, signer := seedRepo(t, reg, name)
	if err := Provider(context.Background(), repo, t.TempDir(), Options{Versions: n, Signer: signer}); err != nil {
		t.Fatal(err)
	}
}

// SignedListing pushes n versions of a provider for the given platforms
// into repository name of a test registry with ListingProvider (every
// index distinct, everything else shared with the first version), signed
// with the test publisher key, for a test or a benchmark of listings.
func SignedListing(t testing.TB, reg *testenv.Registry, name string, n int, platforms []names.Platform) {
	t.Helper()
	repo, signer := seedRepo(t, reg, name)
	if err := ListingProvider(context.Background(), repo, t.TempDir(), Options{Versions: n, Platforms: platforms, Signer: signer}); err != nil {
		t.Fatal(err)
	}
}

// seedRepo opens repository name of a test registry for writing, with
// the test publisher's signer.
func seedRepo(t testing.TB, reg *testenv.Registry, name string) (oci.Repository, *pgp.Signer) {
	t.Helper()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile, Username: reg.Username, Password: reg.Password})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Registry: reg.Host, Repository: name})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	return repo, signer
}

// Push writes a at each tag, replacing whatever the tags held, for a test
// (which it fails on error).
func Push(t testing.TB, repo oci.Repository, a *oci.Artifact, tags ...string) {
	t.Helper()
	held, err := oci.CurrentTags(context.Background(), repo, tags)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oci.Push(context.Background(), repo, a, held, oci.PushOptions{Replace: true}); err != nil {
		t.Fatal(err)
	}
}

// ModuleArtifact is what `oci-tofu push module` pushes for a module zip.
func ModuleArtifact(t testing.TB, zip []byte) *oci.Artifact {
	t.Helper()
	a, err := oci.BuildModule(oci.Blob{
		Descriptor: oci.ModuleLayerDescriptor(digest.FromBytes(zip), int64(len(zip))),
		Open:       func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(zip)), nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// helloKeys names the public key each fixture release of the hello
// provider (testdata/providers/hello) is signed with.
var helloKeys = map[string]string{
	"1.0.0":     "gpg-signer.asc",
	"1.1.0":     "gpg-signer.asc",
	"2.0.0-rc1": "gocrypto-signer.asc",
}

// HelloRelease verifies a fixture release of the hello provider as
// `oci-tofu push provider` does, for a test (which it fails on error).
func HelloRelease(t testing.TB, version string) *release.Provider {
	t.Helper()
	kr, err := pgp.LoadKeyring(testenv.Testdata(t, "keys", helloKeys[version]))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := release.ReadProvider(context.Background(), testenv.Testdata(t, "providers", "hello", version), release.Options{Keys: []*pgp.Keyring{kr}})
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// HelloArtifact is what `oci-tofu push provider` pushes for a fixture
// release of the hello provider (index, platform manifests, provenance).
func HelloArtifact(t testing.TB, version string) *oci.Artifact {
	t.Helper()
	a, err := HelloRelease(t, version).Artifact(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// SignedPlatforms pushes n versions of a provider into repository name
// of a test registry with PlatformsProvider (every index and platform
// manifest distinct, the zips shared), signed with the test publisher
// key.
func SignedPlatforms(t testing.TB, reg *testenv.Registry, name string, n int) {
	t.Helper()
	repo, signer := seedRepo(t, reg, name)
	if err := PlatformsProvider(context.Background(), repo, t.TempDir(), Options{Versions: n, Signer: signer}); err != nil {
		t.Fatal(err)
	}
}

// SmallArtifact is an image manifest of one small layer, content: a
// subject to refer to, or a manifest to push.
func SmallArtifact(t testing.TB, content string) *oci.Artifact {
	t.Helper()
	b := oci.BytesBlob("application/octet-stream", []byte(content), nil)
	cfg := oci.BytesBlob(ocispec.MediaTypeEmptyJSON, []byte("{}"), nil)
	m, err := oci.EncodeManifest(ocispec.Manifest{Config: cfg.Descriptor, Layers: []ocispec.Descriptor{b.Descriptor}})
	if err != nil {
		t.Fatal(err)
	}
	return &oci.Artifact{Blobs: []oci.Blob{b, cfg}, Manifests: []oci.Manifest{m}}
}

// TestdataModule is the package zip of testdata/modules/NAME, packed as
// push packs it.
func TestdataModule(t testing.TB, name string) []byte {
	t.Helper()
	z, err := modulepkg.Pack(context.Background(), testenv.Testdata(t, "modules", name), modulepkg.Options{TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(z.Path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Hello reads the hello 1.0.0 fixture release of testdata, its signature
// checked against the fixture's signing key.
func Hello(t testing.TB) *release.Provider {
	t.Helper()
	kr, err := pgp.LoadKeyring(testenv.Testdata(t, "keys", "gpg-signer.asc"))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := release.ReadProvider(context.Background(), testenv.Testdata(t, "providers", "hello", "1.0.0"), release.Options{Keys: []*pgp.Keyring{kr}})
	if err != nil {
		t.Fatal(err)
	}
	return rel
}
