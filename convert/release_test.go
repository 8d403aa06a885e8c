package convert

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

func copyRelease(t *testing.T, elem ...string) string {
	t.Helper()
	from := fixture(t, elem...)
	to := t.TempDir()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(from, e.Name()))
		os.WriteFile(filepath.Join(to, e.Name()), b, 0o644)
	}
	return to
}

func TestReadProviderReleaseVerified(t *testing.T) {
	rel, err := ReadProviderRelease(fixture(t, "providers", "hello", "1.0.0"), ReleaseOptions{Keys: []*Keyring{mustKeyring(t, "gpg-signer.asc")}})
	if err != nil {
		t.Fatal(err)
	}
	if rel.Type != "hello" || rel.Version != "1.0.0" || len(rel.Packages) != 4 || rel.Protocols[0] != "6.0" || len(rel.KeyIDs) != 1 {
		t.Fatalf("%+v", rel)
	}
	for _, p := range rel.Packages {
		if p.H1 != "" {
			t.Fatal("h1 computed before it was asked for")
		}
	}
	if err := rel.HashPackages(); err != nil {
		t.Fatal(err)
	}
	for _, p := range rel.Packages {
		if p.H1 != tofuH1[p.Platform.String()] {
			t.Errorf("%s: h1 %s, want %s", p.Platform, p.H1, tofuH1[p.Platform.String()])
		}
	}
	if rel.Files.SHA256SUMS.Data == nil || rel.Files.Signature.Data == nil || rel.Files.Keys.Data == nil || rel.Files.ReleaseManifest.Data == nil {
		t.Fatal("provenance files missing")
	}
}

func TestReadProviderReleasePlatformFilter(t *testing.T) {
	keys := []*Keyring{mustKeyring(t, "gpg-signer.asc")}
	dir := copyRelease(t, "providers", "hello", "1.0.0")
	os.Remove(filepath.Join(dir, "terraform-provider-hello_1.0.0_windows_amd64.zip"))
	if _, err := ReadProviderRelease(dir, ReleaseOptions{Keys: keys}); err == nil || !strings.Contains(err.Error(), "missing platform") {
		t.Fatalf("missing platform without filter: %v", err)
	}
	rel, err := ReadProviderRelease(dir, ReleaseOptions{Keys: keys, Platforms: []names.Platform{{OS: "linux", Arch: "amd64"}}})
	if err != nil || len(rel.Packages) != 1 || rel.Packages[0].Platform.String() != "linux_amd64" {
		t.Fatalf("filter: %+v %v", rel, err)
	}
	_, err = ReadProviderRelease(dir, ReleaseOptions{Keys: keys, Platforms: []names.Platform{{OS: "windows", Arch: "amd64"}}})
	if err == nil || !strings.Contains(err.Error(), "windows_amd64") {
		t.Fatalf("asking for an absent platform: %v", err)
	}
}

func TestReadProviderReleaseSignatureChoices(t *testing.T) {
	dir := fixture(t, "providers", "hello", "1.0.0")
	if _, err := ReadProviderRelease(dir, ReleaseOptions{}); err == nil || !strings.Contains(err.Error(), "--key") {
		t.Fatalf("signed release without keys: %v", err)
	}
	rel, err := ReadProviderRelease(dir, ReleaseOptions{Unsigned: true})
	if err != nil || rel.Files.Signature.Data != nil || len(rel.KeyIDs) != 0 {
		t.Fatalf("--unsigned keeps no unverified signature: %+v %v", rel, err)
	}
	// --unsigned still checks zips against SHA256SUMS.
	tampered := copyRelease(t, "providers", "hello", "1.0.0")
	f, _ := os.OpenFile(filepath.Join(tampered, "terraform-provider-hello_1.0.0_darwin_arm64.zip"), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("junk")
	f.Close()
	if _, err := ReadProviderRelease(tampered, ReleaseOptions{Unsigned: true}); err == nil || !strings.Contains(err.Error(), "darwin_arm64.zip: sha256") {
		t.Fatalf("tampered zip with --unsigned: %v", err)
	}
	// A tampered manifest.json listed in SHA256SUMS is caught too.
	m := copyRelease(t, "providers", "hello", "1.0.0")
	os.WriteFile(filepath.Join(m, "terraform-provider-hello_1.0.0_manifest.json"), []byte(`{"version":1,"metadata":{"protocol_versions":["5.0"]}}`), 0o644)
	if _, err := ReadProviderRelease(m, ReleaseOptions{Unsigned: true}); err == nil || !strings.Contains(err.Error(), "manifest.json: sha256") {
		t.Fatalf("tampered manifest.json: %v", err)
	}
}

func TestReadProviderReleaseSignsInHouseBuild(t *testing.T) {
	dir := fixture(t, "providers", "inhouse", "0.1.0")
	if _, err := ReadProviderRelease(dir, ReleaseOptions{}); err == nil || !strings.Contains(err.Error(), "--sign-key") {
		t.Fatalf("no SHA256SUMS and no choice: %v", err)
	}
	signer, err := LoadSigner(fixture(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	read := func() *ProviderRelease {
		rel, err := ReadProviderRelease(dir, ReleaseOptions{Signer: signer})
		if err != nil {
			t.Fatal(err)
		}
		return rel
	}
	a, b := read(), read()
	sums, err := ParseSHA256Sums(a.Files.SHA256SUMS.Data)
	if err != nil || len(sums) != 3 { // two zips and manifest.json
		t.Fatalf("generated SHA256SUMS: %v %v", sums, err)
	}
	if _, err := VerifyDetached(a.Files.SHA256SUMS.Data, a.Files.Signature.Data, []*Keyring{mustKeyring(t, "gocrypto-signer.asc")}); err != nil {
		t.Fatalf("generated signature: %v", err)
	}
	ad, _ := a.Artifact()
	bd, _ := b.Artifact()
	if ad.Root().Digest != bd.Root().Digest {
		t.Fatal("signing the same in-house build twice gave different index digests")
	}
}
