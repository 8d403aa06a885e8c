package release_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
)

func TestReadTofuRelease(t *testing.T) {
	ctx := context.Background()
	gpg := []*pgp.Keyring{mustKeyring(t, "gpg-signer.asc")}
	rel, err := release.ReadTofu(ctx, fixture(t, "tofu", "1.9.0"), gpg)
	if err != nil {
		t.Fatal(err)
	}
	if rel.Version != "1.9.0" || len(rel.Files) != 8 { // 3 tar.gz, 3 zip, SHA256SUMS, .gpgsig
		t.Fatalf("%+v", rel)
	}
	official, err := release.OpenTofuSigningKey()
	if err != nil || !strings.Contains(official.Name, "E3E6E43D84CB852EADB0051D0C0AF313E5FD9F80") {
		t.Fatalf("official key: %v", err)
	}
	if _, err := release.ReadTofu(ctx, fixture(t, "tofu", "1.9.0"), []*pgp.Keyring{official}); err == nil || !strings.Contains(err.Error(), "signature does not verify") {
		t.Fatalf("fixture verified with OpenTofu's key: %v", err)
	}

	tampered := copyRelease(t, "tofu", "1.9.0")
	f, _ := os.OpenFile(filepath.Join(tampered, "tofu_1.9.0_linux_arm64.tar.gz"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("x")
	f.Close()
	if _, err := release.ReadTofu(ctx, tampered, gpg); err == nil || !strings.Contains(err.Error(), "tofu_1.9.0_linux_arm64.tar.gz: sha256") {
		t.Fatalf("tampered archive: %v", err)
	}
	extra := copyRelease(t, "tofu", "1.9.0")
	os.WriteFile(filepath.Join(extra, "tofu_1.9.0_evil.sh"), []byte("x"), 0o644)
	if _, err := release.ReadTofu(ctx, extra, gpg); err == nil || !strings.Contains(err.Error(), "not listed") {
		t.Fatalf("unlisted file: %v", err)
	}
	unsigned := copyRelease(t, "tofu", "1.9.0")
	os.Remove(filepath.Join(unsigned, "tofu_1.9.0_SHA256SUMS.gpgsig"))
	if _, err := release.ReadTofu(ctx, unsigned, gpg); err == nil || !strings.Contains(err.Error(), "must be signed") {
		t.Fatalf("unsigned: %v", err)
	}
}

func TestPushTofuReleaseRoundTrip(t *testing.T) {
	ctx := context.Background()
	repo, _ := orasoci.New(t.TempDir())
	rel, err := release.ReadTofu(ctx, fixture(t, "tofu", "1.8.0"), []*pgp.Keyring{mustKeyring(t, "gpg-signer.asc")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := rel.Push(ctx, repo, oci.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	again, err := rel.Push(ctx, repo, oci.PushOptions{})
	if err != nil || !again.UpToDate || again.Root.Digest != res.Root.Digest {
		t.Fatalf("%+v %v", again, err)
	}
	d, _ := repo.Resolve(ctx, "1.8.0")
	cfg, files, err := oci.ReadTofuRelease(ctx, repo, d)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Version != "1.8.0" || len(cfg.Files) != len(rel.Files) || len(files) != len(rel.Files) {
		t.Fatalf("%+v %v", cfg, files)
	}
	for _, f := range rel.Files {
		want, _ := os.ReadFile(f.Path)
		var got strings.Builder
		if err := oci.FetchBlob(ctx, repo, files[f.Name], 1<<20, &got); err != nil || got.String() != string(want) {
			t.Fatalf("%s: %v", f.Name, err)
		}
	}
}
