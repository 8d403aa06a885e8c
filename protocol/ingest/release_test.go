package ingest_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

func originClient(t *testing.T) *origin.Client {
	t.Helper()
	tr, err := oci.NewTransport(oci.Options{CAFile: testenv.NewCA(t).CertFile})
	if err != nil {
		t.Fatal(err)
	}
	return origin.NewClient(tr)
}

// resolve reads version v of ns/hello from the origin.
func resolve(t *testing.T, c *origin.Client, o *testenv.Origin, ns, v string) (*ingest.ProviderOriginRelease, error) {
	t.Helper()
	addr := names.Provider{Hostname: o.Host, Namespace: ns, Type: "hello"}
	vs, err := c.Versions(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, rv := range vs {
		if rv.Version == v {
			return ingest.ResolveProviderRelease(context.Background(), c, addr, rv, ingest.ResolveOptions{Concurrency: 4})
		}
	}
	t.Fatalf("%s not offered", v)
	return nil, nil
}

// SHA256SUMS and its signature are verified before any package is
// downloaded; each package is checked as it downloads; the directory then
// pushes as `push provider` would push the original release.
func TestProviderReleaseVerifiesBeforeDownloading(t *testing.T) {
	gpg := testenv.Testdata(t, "keys", "gpg-signer.asc")
	fixture := testenv.Testdata(t, "providers", "hello", "1.0.0")
	o := testenv.StartOrigin(t, []testenv.OriginRelease{
		{Namespace: "good", Type: "hello", Dir: fixture, Key: gpg},
		{Namespace: "wrongkey", Type: "hello", Dir: fixture, Key: testenv.Testdata(t, "keys", "other.asc")},
	})
	c := originClient(t)

	if _, err := resolve(t, c, o, "wrongkey", "1.0.0"); !errors.Is(err, ingest.ErrVerification) || !strings.Contains(err.Error(), "signature") {
		t.Errorf("signature by another key: %v", err)
	}
	if n := o.Count(func(p string) bool { return strings.HasSuffix(p, ".zip") }); n != 0 {
		t.Errorf("%d packages downloaded before the signature verified", n)
	}

	rel, err := resolve(t, c, o, "good", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(rel.Platforms) != 4 || rel.KeyID == "" || rel.ZipSHA256(names.Platform{OS: "linux", Arch: "amd64"}) == "" {
		t.Fatalf("release: %+v", rel)
	}
	dir := t.TempDir()
	if err := rel.WriteChecksums(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range rel.Platforms {
		if err := rel.DownloadZip(context.Background(), c, p, dir, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	client, _ := oci.NewClient(oci.Options{})
	repo, err := client.Open(oci.Reference{Layout: true, Repository: filepath.Join(t.TempDir(), "layout")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := rel.PushDir(context.Background(), dir, repo, oci.PushOptions{})
	if err != nil || res.Root.Digest == "" {
		t.Fatalf("push: %+v, %v", res, err)
	}

	// A package altered at the origin fails its download as tampered.
	o.Tamper(t, "files/good/hello/terraform-provider-hello_1.0.0_linux_amd64.zip", func(b []byte) []byte { return append(b, 'x') })
	again := t.TempDir()
	err = rel.DownloadZip(context.Background(), c, names.Platform{OS: "linux", Arch: "amd64"}, again, 1<<20)
	if !errors.Is(err, ingest.ErrVerification) {
		t.Errorf("tampered package: %v", err)
	}
	// And a bound is a bound.
	if err := rel.DownloadZip(context.Background(), c, names.Platform{OS: "darwin", Arch: "arm64"}, again, 10); err == nil {
		t.Error("a package larger than the bound was accepted")
	}
}
