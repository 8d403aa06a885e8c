package release_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

func TestReadProviderReleaseVerified(t *testing.T) {
	ctx := context.Background()
	rel, err := release.ReadProvider(ctx, fixture(t, "providers", "hello", "1.0.0"), release.Options{Keys: []*pgp.Keyring{mustKeyring(t, "gpg-signer.asc")}})
	if err != nil {
		t.Fatal(err)
	}
	if rel.Type != "hello" || rel.Version != "1.0.0" || len(rel.Packages) != 4 || rel.Protocols[0] != "6.0" || len(rel.KeyIDs) != 1 {
		t.Fatalf("%+v", rel)
	}
	h1, err := rel.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rel.Packages {
		if h1[p.Platform] != tofuH1[p.Platform.String()] {
			t.Errorf("%s: h1 %s, want %s", p.Platform, h1[p.Platform], tofuH1[p.Platform.String()])
		}
	}
	if rel.Files.SHA256SUMS.Data == nil || rel.Files.Signature.Data == nil || rel.Files.Keys.Data == nil || rel.Files.ReleaseManifest.Data == nil {
		t.Fatal("provenance files missing")
	}
}

func TestReadProviderReleasePlatformFilter(t *testing.T) {
	ctx := context.Background()
	keys := []*pgp.Keyring{mustKeyring(t, "gpg-signer.asc")}
	dir := copyRelease(t, "providers", "hello", "1.0.0")
	os.Remove(filepath.Join(dir, "terraform-provider-hello_1.0.0_windows_amd64.zip"))
	if _, err := release.ReadProvider(ctx, dir, release.Options{Keys: keys}); !errors.Is(err, release.ErrMissingPlatform) {
		t.Fatalf("missing platform without filter: %v", err)
	}
	rel, err := release.ReadProvider(ctx, dir, release.Options{Keys: keys, Platforms: []names.Platform{{OS: "linux", Arch: "amd64"}}})
	if err != nil || len(rel.Packages) != 1 || rel.Packages[0].Platform.String() != "linux_amd64" {
		t.Fatalf("filter: %+v %v", rel, err)
	}
	_, err = release.ReadProvider(ctx, dir, release.Options{Keys: keys, Platforms: []names.Platform{{OS: "windows", Arch: "amd64"}}})
	if err == nil || !strings.Contains(err.Error(), "windows_amd64") {
		t.Fatalf("asking for an absent platform: %v", err)
	}
}

func TestReadProviderReleaseSignatureChoices(t *testing.T) {
	ctx := context.Background()
	dir := fixture(t, "providers", "hello", "1.0.0")
	if _, err := release.ReadProvider(ctx, dir, release.Options{}); !errors.Is(err, pgp.ErrNoKey) {
		t.Fatalf("signed release without keys: %v", err)
	}
	rel, err := release.ReadProvider(ctx, dir, release.Options{Unsigned: true})
	if err != nil || rel.Files.Signature.Data != nil || len(rel.KeyIDs) != 0 {
		t.Fatalf("--unsigned keeps no unverified signature: %+v %v", rel, err)
	}
	// --unsigned still checks zips against SHA256SUMS.
	tampered := copyRelease(t, "providers", "hello", "1.0.0")
	f, _ := os.OpenFile(filepath.Join(tampered, "terraform-provider-hello_1.0.0_darwin_arm64.zip"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("junk")
	f.Close()
	rel, err = release.ReadProvider(ctx, tampered, release.Options{Unsigned: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rel.Artifact(ctx); err == nil || !strings.Contains(err.Error(), "darwin_arm64.zip: sha256") {
		t.Fatalf("tampered zip with --unsigned: %v", err)
	}
	// A tampered manifest.json listed in SHA256SUMS is caught too.
	m := copyRelease(t, "providers", "hello", "1.0.0")
	os.WriteFile(filepath.Join(m, "terraform-provider-hello_1.0.0_manifest.json"), []byte(`{"version":1,"metadata":{"protocol_versions":["5.0"]}}`), 0o644)
	if _, err := release.ReadProvider(ctx, m, release.Options{Unsigned: true}); err == nil || !strings.Contains(err.Error(), "manifest.json: sha256") {
		t.Fatalf("tampered manifest.json: %v", err)
	}
}

func TestReadProviderReleaseSignsInHouseBuild(t *testing.T) {
	ctx := context.Background()
	dir := fixture(t, "providers", "inhouse", "0.1.0")
	if _, err := release.ReadProvider(ctx, dir, release.Options{}); !errors.Is(err, release.ErrNotSigned) {
		t.Fatalf("no SHA256SUMS and no choice: %v", err)
	}
	signer, err := pgp.LoadSigner(fixture(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	read := func() *release.Provider {
		rel, err := release.ReadProvider(ctx, dir, release.Options{Signer: signer})
		if err != nil {
			t.Fatal(err)
		}
		return rel
	}
	a, b := read(), read()
	sums, err := sha256sums.Parse(a.Files.SHA256SUMS.Data)
	if err != nil || len(sums) != 3 { // two zips and manifest.json
		t.Fatalf("generated SHA256SUMS: %v %v", sums, err)
	}
	if _, err := pgp.VerifyDetached(a.Files.SHA256SUMS.Data, a.Files.Signature.Data, []*pgp.Keyring{mustKeyring(t, "gocrypto-signer.asc")}); err != nil {
		t.Fatalf("generated signature: %v", err)
	}
	ad, _ := a.Artifact(ctx)
	bd, _ := b.Artifact(ctx)
	if ad.Root().Digest != bd.Root().Digest {
		t.Fatal("signing the same in-house build twice gave different index digests")
	}
}
