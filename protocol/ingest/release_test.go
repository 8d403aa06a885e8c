package ingest_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/versionindex"
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

// downloaded is a directory holding rel's checksums and packages.
func downloaded(t *testing.T, c *origin.Client, rel *ingest.ProviderOriginRelease) string {
	t.Helper()
	dir := t.TempDir()
	if err := rel.WriteChecksums(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range rel.Platforms {
		if err := rel.DownloadZip(context.Background(), c, p, dir, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	return dir
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
	dir := downloaded(t, c, rel)
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

// A mirrored release whose push could not update the repository's
// version index says so (IndexNote), and the push itself succeeds: the
// note is what `mirror` reports and pull-through logs.
func TestPushDirKeepsTheIndexNote(t *testing.T) {
	o := testenv.StartOrigin(t, []testenv.OriginRelease{{Namespace: "good", Type: "hello",
		Dir: testenv.Testdata(t, "providers", "hello", "1.0.0"), Key: testenv.Testdata(t, "keys", "gpg-signer.asc")}})
	c := originClient(t)
	rel, err := resolve(t, c, o, "good", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	dir := downloaded(t, c, rel)
	reg := testenv.StartRegistry(t)
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{
		Match: func(r *http.Request) bool {
			return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/manifests/"+versionindex.Tag)
		},
		Fault: testenv.ErrorAnswer(http.StatusForbidden, "DENIED", "no writes of this tag"),
	}}})
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{front.Host, reg.Host} {
		repo, err := client.Open(oci.Reference{Registry: host, Repository: "p/hello"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := rel.PushDir(context.Background(), dir, repo, oci.PushOptions{Replace: true})
		if err != nil || res.Root.Digest == "" {
			t.Fatalf("push through %s: %+v, %v", host, res, err)
		}
		if refused := host == front.Host; refused != strings.Contains(rel.IndexNote, "no writes of this tag") {
			t.Errorf("through %s (index writes refused: %v): note %q", host, refused, rel.IndexNote)
		}
	}
}
