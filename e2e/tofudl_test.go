package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opentofu/tofudl"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// tofuBinary is the tofu file inside a fixture release's tar.gz.
func tofuBinary(t *testing.T, version, platform string) []byte {
	t.Helper()
	f, err := os.Open(testenv.Testdata(t, "tofu", version, "tofu_"+version+"_"+platform+".tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("no tofu in the %s fixture: %v", version, err)
		}
		if h.Name == "tofu" {
			b, err := io.ReadAll(io.LimitReader(tr, 1<<20))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

// newTofuDL is the reference TofuDL client pointed at the proxy's mirror,
// trusting the fixtures' signing key instead of OpenTofu's.
func newTofuDL(t *testing.T, s *served, extra ...tofudl.ConfigOpt) tofudl.Downloader {
	t.Helper()
	key, err := os.ReadFile(testenv.Testdata(t, "keys", "gpg-signer.asc"))
	if err != nil {
		t.Fatal(err)
	}
	dl, err := tofudl.New(append([]tofudl.ConfigOpt{
		tofudl.ConfigAPIURL(s.URL + "/tofu/api.json"),
		tofudl.ConfigDownloadMirrorURLTemplate(s.URL + "/tofu/download/v{{ .Version }}/{{ .Artifact }}"),
		tofudl.ConfigGPGKey(string(key)),
		tofudl.ConfigHTTPClient(s.client),
	}, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return dl
}

func pushTofu(t *testing.T, repo string, versions ...string) {
	t.Helper()
	for _, v := range versions {
		mustRun(t, "push", "tofu", "--quiet", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), testenv.Testdata(t, "tofu", v), repo)
	}
}

func findVersion(t *testing.T, list []tofudl.VersionWithArtifacts, id string) tofudl.VersionWithArtifacts {
	t.Helper()
	for _, v := range list {
		if string(v.ID) == id {
			return v
		}
	}
	t.Fatalf("version %s not listed: %+v", id, list)
	return tofudl.VersionWithArtifacts{}
}

// The reference client, tofudl, lists, downloads and verifies OpenTofu
// releases from the proxy's TofuDL mirror, the releases living in a real
// registry as `oci-tofu push tofu` pushed them: a chosen version, and the
// latest stable one (1.9.0, not the newer 1.10.0-beta1).
func TestTofuDLThroughProxy(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/tools/opentofu"
	pushTofu(t, repo, "1.8.0", "1.9.0", "1.10.0-beta1")
	s := startServe(t, "--tofu-repository", repo)
	dl := newTofuDL(t, s)
	ctx := context.Background()

	list, err := dl.ListVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, v := range list {
		ids = append(ids, string(v.ID))
	}
	if !slices.Equal(ids, []string{"1.10.0-beta1", "1.9.0", "1.8.0"}) {
		t.Fatalf("versions %v", ids)
	}
	if v := findVersion(t, list, "1.8.0"); !slices.Contains(v.Files, "tofu_1.8.0_SHA256SUMS.gpgsig") || !slices.Contains(v.Files, "tofu_1.8.0_linux_arm64.tar.gz") {
		t.Errorf("1.8.0 files %v", v.Files)
	}
	stable, err := dl.ListVersions(ctx, tofudl.ListVersionOptMinimumStability(tofudl.StabilityStable))
	if err != nil || len(stable) != 2 || stable[0].ID != "1.9.0" {
		t.Fatalf("stable versions %+v, %v", stable, err)
	}

	// A chosen version, for two platforms.
	for _, arch := range []tofudl.Architecture{tofudl.ArchitectureAMD64, tofudl.ArchitectureARM64} {
		bin, err := dl.DownloadVersion(ctx, findVersion(t, list, "1.8.0"), tofudl.PlatformLinux, arch)
		if err != nil {
			t.Fatalf("1.8.0 linux_%s: %v", arch, err)
		}
		if want := tofuBinary(t, "1.8.0", "linux_"+string(arch)); !bytes.Equal(bin, want) {
			t.Fatalf("1.8.0 linux_%s: got %q, want %q", arch, bin, want)
		}
	}
	// The latest stable version.
	bin, err := dl.Download(ctx, tofudl.DownloadOptMinimumStability(tofudl.StabilityStable),
		tofudl.DownloadOptPlatform(tofudl.PlatformLinux), tofudl.DownloadOptArchitecture(tofudl.ArchitectureAMD64))
	if err != nil {
		t.Fatal(err)
	}
	if want := tofuBinary(t, "1.9.0", "linux_amd64"); !bytes.Equal(bin, want) {
		t.Fatalf("latest stable: got %q, want 1.9.0's %q", bin, want)
	}
	// Pre-releases when asked for.
	bin, err = dl.Download(ctx, tofudl.DownloadOptMinimumStability(tofudl.StabilityBeta),
		tofudl.DownloadOptPlatform(tofudl.PlatformLinux), tofudl.DownloadOptArchitecture(tofudl.ArchitectureAMD64))
	if err != nil || !bytes.Equal(bin, tofuBinary(t, "1.10.0-beta1", "linux_amd64")) {
		t.Fatalf("latest beta: %q, %v", bin, err)
	}
	// A platform the release does not have.
	var unsupported *tofudl.UnsupportedPlatformOrArchitectureError
	if _, err := dl.DownloadVersion(ctx, findVersion(t, list, "1.10.0-beta1"), tofudl.PlatformMacOS, tofudl.ArchitectureARM64); !errors.As(err, &unsupported) {
		t.Errorf("darwin_arm64 of 1.10.0-beta1: %v", err)
	}
	// Another signing key: tofudl refuses the release.
	other, _ := os.ReadFile(testenv.Testdata(t, "keys", "other.asc"))
	key, _ := os.ReadFile(testenv.Testdata(t, "keys", "gpg-signer.asc"))
	wrongKey, err := tofudl.New(
		tofudl.ConfigAPIURL(s.URL+"/tofu/api.json"),
		tofudl.ConfigDownloadMirrorURLTemplate(s.URL+"/tofu/download/v{{ .Version }}/{{ .Artifact }}"),
		tofudl.ConfigGPGKey(string(other)),
		tofudl.ConfigHTTPClient(s.client),
	)
	if err != nil || bytes.Equal(other, key) {
		t.Fatal(err)
	}
	if _, err := wrongKey.DownloadVersion(ctx, findVersion(t, list, "1.9.0"), tofudl.PlatformLinux, tofudl.ArchitectureAMD64); err == nil {
		t.Error("a release verified with a key that did not sign it")
	}
}

// A release altered in the registry fails tofudl's verification: a file
// corrupted in storage (the proxy aborts the stream) and a crafted
// artifact whose archive is another, validly stored tar.gz (the proxy
// serves what the artifact says; SHA256SUMS and its signature catch it).
func TestTofuDLTamperedRelease(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/tools/opentofu"
	pushTofu(t, repo, "1.8.0", "1.9.0")
	s := startServe(t, "--tofu-repository", repo, "--tag-ttl", "1ms", "--resolve-ttl", "1ms", "--max-stale", "-1s")
	ctx := context.Background()
	dl := newTofuDL(t, s)
	list, err := dl.ListVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Corrupt storage: the registry returns other bytes for 1.8.0's archive.
	name := "tofu_1.8.0_linux_amd64.tar.gz"
	orig, _ := os.ReadFile(testenv.Testdata(t, "tofu", "1.8.0", name))
	data := filepath.Join(reg.Storage, "docker", "registry", "v2", "blobs", "sha256", sha256Hex(orig)[:2], sha256Hex(orig), "data")
	bad := bytes.Clone(orig)
	bad[len(bad)/2] ^= 0x01
	if err := os.WriteFile(data, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if bin, err := dl.DownloadVersion(ctx, findVersion(t, list, "1.8.0"), tofudl.PlatformLinux, tofudl.ArchitectureAMD64); err == nil {
		t.Fatalf("tofudl accepted a corrupt archive: %q", bin)
	}
	if !strings.Contains(s.logs.String(), "digest_mismatch") {
		t.Errorf("the proxy did not abort the corrupt stream:\n%s", s.logs.String())
	}
	os.WriteFile(data, orig, 0o644)
	if _, err := dl.DownloadVersion(ctx, findVersion(t, list, "1.8.0"), tofudl.PlatformLinux, tofudl.ArchitectureAMD64); err != nil {
		t.Fatalf("after repair: %v", err)
	}

	// A crafted 1.9.0 whose linux_amd64 archive is 1.8.0's, consistently
	// described in the artifact (so the proxy streams it), pushed over the
	// tag with oras-go as any tool could.
	kr, err := pgp.LoadKeyring(testenv.Testdata(t, "keys", "gpg-signer.asc"))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := release.ReadTofu(context.Background(), testenv.Testdata(t, "tofu", "1.9.0"), []*pgp.Keyring{kr})
	if err != nil {
		t.Fatal(err)
	}
	swapped := filepath.Join(t.TempDir(), "swapped.tar.gz")
	os.WriteFile(swapped, orig, 0o644)
	for i, f := range rel.Files {
		if f.Name == "tofu_1.9.0_linux_amd64.tar.gz" {
			rel.Files[i].Path, rel.Files[i].SHA256, rel.Files[i].Size = swapped, sha256Hex(orig), int64(len(orig))
		}
	}
	a, err := rel.Artifact()
	if err != nil {
		t.Fatal(err)
	}
	r := registryRepo(t, reg, "tools/opentofu")
	held, err := oci.CurrentTags(ctx, r, []string{"1.9.0"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oci.Push(ctx, r, a, held, oci.PushOptions{Replace: true}); err != nil { // replaces the genuine release
		t.Fatal(err)
	}
	_, err = dl.Download(ctx, tofudl.DownloadOptVersion("1.9.0"), tofudl.DownloadOptPlatform(tofudl.PlatformLinux), tofudl.DownloadOptArchitecture(tofudl.ArchitectureAMD64))
	var corrupted *tofudl.ArtifactCorruptedError
	var sigErr *tofudl.SignatureError
	if err == nil || !(errors.As(err, &corrupted) || errors.As(err, &sigErr)) {
		t.Fatalf("tofudl on a tampered release: %v", err)
	}
}

// With client authentication, tofudl sends the proxy's bearer token to
// both the API and the download mirror.
func TestTofuDLWithAuth(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/tools/opentofu"
	pushTofu(t, repo, "1.9.0")
	token := "tofudl-token-0123456789abcdef"
	tokens := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokens, []byte(token+"\n"), 0o600)
	s := startServe(t, "--tofu-repository", repo, "--auth-token-file", tokens)
	ctx := context.Background()
	if _, err := newTofuDL(t, s).ListVersions(ctx); err == nil {
		t.Fatal("api.json without a token")
	}
	dl := newTofuDL(t, s, tofudl.ConfigAPIAuthorization("Bearer "+token), tofudl.ConfigDownloadMirrorAuthorization("Bearer "+token))
	bin, err := dl.Download(ctx, tofudl.DownloadOptPlatform(tofudl.PlatformLinux), tofudl.DownloadOptArchitecture(tofudl.ArchitectureAMD64))
	if err != nil || !bytes.Equal(bin, tofuBinary(t, "1.9.0", "linux_amd64")) {
		t.Fatalf("with a token: %q, %v", bin, err)
	}
	apiOnly := newTofuDL(t, s, tofudl.ConfigAPIAuthorization("Bearer "+token))
	if _, err := apiOnly.Download(ctx, tofudl.DownloadOptPlatform(tofudl.PlatformLinux), tofudl.DownloadOptArchitecture(tofudl.ArchitectureAMD64)); err == nil {
		t.Fatal("downloads without a token")
	}
	if strings.Contains(s.logs.String(), token) {
		t.Error("token in the proxy log")
	}
}

// push tofu refuses a release that does not verify, and tags nothing.
func TestPushTofuRefuses(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/tools/opentofu"

	tampered := filepath.Join(t.TempDir(), "1.9.0")
	testenv.MustRun(t, "", nil, "cp", "-r", testenv.Testdata(t, "tofu", "1.9.0"), tampered)
	archive := filepath.Join(tampered, "tofu_1.9.0_linux_amd64.tar.gz")
	b, _ := os.ReadFile(archive)
	b[len(b)-5] ^= 0xff
	os.WriteFile(archive, b, 0o644)

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"tampered archive", []string{"--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), tampered, repo}, "tofu_1.9.0_linux_amd64.tar.gz"},
		{"wrong key", []string{"--key", testenv.Testdata(t, "keys", "other.asc"), testenv.Testdata(t, "tofu", "1.9.0"), repo}, "signature"},
		{"default key", []string{testenv.Testdata(t, "tofu", "1.9.0"), repo}, "signature"},
		{"tag given", []string{"--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), testenv.Testdata(t, "tofu", "1.9.0"), repo + ":1.9.0"}, "without a tag"},
	} {
		out, err := run(t, append([]string{"push", "tofu"}, c.args...)...)
		if err == nil || !strings.Contains(strings.ToLower(out), strings.ToLower(c.want)) {
			t.Errorf("%s: want an error mentioning %q, got %v:\n%s", c.name, c.want, err, out)
		}
	}
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	r, err := client.OpenReadOnly(context.Background(), oci.Reference{Registry: reg.Host, Repository: "tools/opentofu"})
	if err == nil {
		if list, err := oci.ListVersions(context.Background(), r); err == nil && len(list) > 0 {
			t.Fatalf("refused pushes tagged %v", list)
		}
	}
	// And the mirror stays empty.
	s := startServe(t, "--tofu-repository", repo)
	if code, body := s.get(t, "/tofu/api.json"); code != 200 || strings.TrimSpace(string(body)) != `{"versions":[]}` {
		t.Errorf("api.json after refused pushes: %d %s", code, body)
	}
}
