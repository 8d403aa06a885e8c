package store_test

import (
	"archive/zip"
	"bytes"
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

func keyring(t testing.TB, name string) *pgp.Keyring {
	t.Helper()
	kr, err := pgp.LoadKeyring(testenv.Testdata(t, "keys", name))
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

// providerRelease verifies a fixture release of the hello provider as
// `oci-tofu push provider` does.
func providerRelease(t testing.TB, version string) *release.Provider {
	t.Helper()
	return seed.HelloRelease(t, version)
}

// providerArtifact is what `oci-tofu push provider` pushes for a fixture
// release (index, platform manifests, provenance).
func providerArtifact(t testing.TB, version string) *oci.Artifact {
	t.Helper()
	return seed.HelloArtifact(t, version)
}

// tofuArtifact is what `oci-tofu push tofu` pushes for a fixture release.
func tofuArtifact(t testing.TB, version string) *oci.Artifact {
	t.Helper()
	rel, err := release.ReadTofu(context.Background(), testenv.Testdata(t, "tofu", version), []*pgp.Keyring{keyring(t, "gpg-signer.asc")})
	if err != nil {
		t.Fatal(err)
	}
	a, err := rel.Artifact()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// moduleZip is a one-file module package.
func moduleZip(t testing.TB, body string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("main.tf")
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, body)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// moduleArtifact is what `oci-tofu push module` pushes for a zip.
func moduleArtifact(t testing.TB, z []byte) *oci.Artifact {
	t.Helper()
	return seed.ModuleArtifact(t, z)
}

// push writes a at each tag, replacing whatever the tags held.
func push(t testing.TB, repo oci.Repository, a *oci.Artifact, tags ...string) {
	t.Helper()
	seed.Push(t, repo, a, tags...)
}

// layout is an OCI layout directory the test writes with the project's
// own push code and a store reads.
type layout struct {
	ref  oci.Reference
	repo oci.Repository
}

func newLayout(t testing.TB) *layout {
	t.Helper()
	client := newClient(t, oci.Options{})
	ref := oci.Reference{Layout: true, Repository: filepath.Join(t.TempDir(), "hello")}
	repo, err := client.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	return &layout{ref: ref, repo: repo}
}

func newClient(t testing.TB, opts oci.Options) *oci.Client {
	t.Helper()
	c, err := oci.NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newStore is a store with the given options and a client for layouts
// unless opts has one.
func newStore(t testing.TB, opts store.Options) *store.Store {
	t.Helper()
	if opts.Client == nil {
		opts.Client = newClient(t, oci.Options{})
	}
	return store.New(opts)
}

func version(t testing.TB, s string) names.Version {
	t.Helper()
	v, err := names.ParseVersion(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// failure is the class of a store error, failing the test on success.
func failure(t testing.TB, err error) oci.Failure {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	return store.FailureOf(err)
}
