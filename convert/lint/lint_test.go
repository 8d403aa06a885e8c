package lint_test

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	orasoci "oras.land/oras-go/v2/content/oci"

	"github.com/oci-tofu/oci-tofu/convert/lint"
	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// craft pushes hand-made manifests (children first, root last) under tag.
func craft(t *testing.T, repo oci.Repository, tag string, blobs []oci.Blob, manifests ...oci.Manifest) {
	t.Helper()
	empty := oci.BytesBlob(ocispec.DescriptorEmptyJSON.MediaType, []byte("{}"), nil)
	a := &oci.Artifact{Blobs: append([]oci.Blob{empty}, blobs...), Manifests: manifests}
	if _, err := oci.Push(context.Background(), repo, a, oci.Tags{tag: ""}, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
}

func zipBytes(t *testing.T, files map[string]string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, body := range files {
		w, _ := zw.Create(name)
		w.Write([]byte(body))
	}
	zw.Close()
	return b.Bytes()
}

func platformManifest(t *testing.T, artifactType string, layers ...ocispec.Descriptor) oci.Manifest {
	m, err := oci.EncodeManifest(ocispec.Manifest{ArtifactType: artifactType, Config: ocispec.DescriptorEmptyJSON, Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func index(t *testing.T, artifactType string, descs ...ocispec.Descriptor) oci.Manifest {
	m, err := oci.EncodeIndex(ocispec.Index{ArtifactType: artifactType, Manifests: descs})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func onPlatform(m oci.Manifest, os, arch string) ocispec.Descriptor {
	d := m.Descriptor
	d.ArtifactType = oci.ArtifactTypeProviderTarget
	d.Platform = &ocispec.Platform{OS: os, Architecture: arch}
	return d
}

func TestVerifyFlagsBrokenArtifacts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	repo, err := orasoci.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A good release, pushed by the packer.
	rel := seed.Hello(t)
	good, err := rel.Push(ctx, repo, oci.PushOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Tags OpenTofu ignores ("v1.0.0", "latest") or lists as 1.0.0, which
	// is there ("1.0"), or lists as 2.1.0, which is not ("2.1").
	for _, tag := range []string{"v1.0.0", "latest", "1.0", "2.1"} {
		repo.Tag(ctx, good.Root, tag)
	}

	okZip := oci.BytesBlob(oci.MediaTypeZip, zipBytes(t, map[string]string{"terraform-provider-x": "bin"}), nil)
	notZip := oci.BytesBlob(oci.MediaTypeZip, []byte("this is not a zip"), nil)
	pm := platformManifest(t, oci.ArtifactTypeProviderTarget, okZip.Descriptor)
	noBodyType := platformManifest(t, "", okZip.Descriptor)
	twoZips := platformManifest(t, oci.ArtifactTypeProviderTarget, okZip.Descriptor, okZip.Descriptor)
	badZip := platformManifest(t, oci.ArtifactTypeProviderTarget, notZip.Descriptor)
	noPlatform := pm.Descriptor
	noPlatform.ArtifactType = oci.ArtifactTypeProviderTarget
	blobs := []oci.Blob{okZip, notZip}

	craft(t, repo, "2.0.0", blobs, pm, index(t, "application/vnd.example", onPlatform(pm, "linux", "amd64")))
	craft(t, repo, "2.0.1", blobs, pm, index(t, oci.ArtifactTypeProvider, onPlatform(pm, "linux", "amd64"), onPlatform(pm, "linux", "amd64")))
	craft(t, repo, "2.0.2", blobs, pm, index(t, oci.ArtifactTypeProvider, noPlatform))
	craft(t, repo, "2.0.3", blobs, twoZips, index(t, oci.ArtifactTypeProvider, onPlatform(twoZips, "linux", "amd64")))
	craft(t, repo, "2.0.4", blobs, noBodyType, index(t, oci.ArtifactTypeProvider, onPlatform(noBodyType, "linux", "amd64")))
	craft(t, repo, "2.0.5", blobs, badZip, index(t, oci.ArtifactTypeProvider, onPlatform(badZip, "linux", "amd64")))
	craft(t, repo, "2.0.6", blobs, pm)                                                                       // platform manifest tagged directly
	craft(t, repo, "2.0.7", blobs, pm, index(t, oci.ArtifactTypeProvider, onPlatform(pm, "linux", "amd64"))) // third-party style: valid
	modGood := platformManifest(t, oci.ArtifactTypeModule, okZip.Descriptor)
	slip := oci.BytesBlob(oci.MediaTypeZip, zipBytes(t, map[string]string{"../escape.tf": "x"}), nil)
	modSlip := platformManifest(t, oci.ArtifactTypeModule, slip.Descriptor)
	craft(t, repo, "broken-latest", blobs, twoZips, index(t, oci.ArtifactTypeProvider, onPlatform(twoZips, "linux", "amd64")))
	craft(t, repo, "mod-good", blobs, modGood)
	craft(t, repo, "mod-slip", []oci.Blob{slip}, modSlip)

	verify := func(tag string) []lint.Finding {
		ref := oci.Reference{Layout: true, Repository: dir, Reference: tag}
		f, err := lint.Check(ctx, repo, ref, lint.Options{})
		if err != nil {
			t.Fatalf("%s: %v", tag, err)
		}
		return f
	}
	cases := map[string]string{
		"2.1":      `OpenTofu then fails resolving tag "2.1.0"`,
		"2.0.0":    "artifactType",
		"2.0.1":    "more than one manifest",
		"2.0.2":    "lacks a platform",
		"2.0.3":    "ambiguous",
		"2.0.4":    "artifactType",
		"2.0.5":    "not a readable zip",
		"2.0.6":    "provider platform manifest",
		"mod-slip": "..",
	}
	for tag, want := range cases {
		f := verify(tag)
		if !hasFinding(f, lint.SeverityError, want) {
			t.Errorf("%s: want an error mentioning %q, got %+v", tag, want, f)
		}
	}
	for _, tag := range []string{"1.0.0", "mod-good"} {
		if f := verify(tag); hasSeverity(f, lint.SeverityError) || hasSeverity(f, lint.SeverityWarning) || !hasSeverity(f, lint.SeverityOK) {
			t.Errorf("%s: good artifact flagged: %+v", tag, f)
		}
	}
	if f := verify("2.0.7"); hasSeverity(f, lint.SeverityError) || !hasFinding(f, lint.SeverityWarning, "no oci-tofu provenance") {
		t.Errorf("third-party artifact: %+v", f)
	}
	// What OpenTofu never reads cannot make it fail: warnings only.
	for tag, want := range map[string]string{
		"v1.0.0":        "oci_mirror ignores it",
		"latest":        "oci_mirror ignores it",
		"1.0":           `installs from tag "1.0.0": this tag is never read`,
		"broken-latest": "ambiguous",
	} {
		if f := verify(tag); hasSeverity(f, lint.SeverityError) || !hasFinding(f, lint.SeverityWarning, want) {
			t.Errorf("%s: want only warnings, one mentioning %q: %+v", tag, want, f)
		}
	}

	// A zip blob altered in storage is caught by its digest.
	pv, _ := oci.ResolveProvider(ctx, repo, names.MustParseVersion("1.0.0"))
	z, _ := oci.ReadProviderPackage(ctx, repo, pv.Platforms[names.Platform{OS: "linux", Arch: "amd64"}])
	blobPath := filepath.Join(dir, "blobs", "sha256", z.Digest.Encoded())
	os.Chmod(blobPath, 0o644)
	data, _ := os.ReadFile(blobPath)
	data[len(data)/2] ^= 0xff
	os.WriteFile(blobPath, data, 0o644)
	if f, err := lint.Check(ctx, repo, oci.Reference{Layout: true, Repository: dir, Reference: "1.0.0"}, lint.Options{}); err != nil || !hasFinding(f, lint.SeverityError, "linux_amd64") {
		t.Errorf("corrupted blob not flagged: %+v", f)
	}

	// Every tag when none is named.
	all, err := lint.Check(ctx, repo, oci.Reference{Layout: true, Repository: dir}, lint.Options{SkipZips: true})
	if err != nil || len(all) < len(cases) {
		t.Fatalf("all tags: %d findings, %v", len(all), err)
	}
}

func hasSeverity(f []lint.Finding, s lint.Severity) bool {
	for _, x := range f {
		if x.Severity == s {
			return true
		}
	}
	return false
}

func hasFinding(f []lint.Finding, s lint.Severity, text string) bool {
	for _, x := range f {
		if x.Severity == s && strings.Contains(x.Message, text) {
			return true
		}
	}
	return false
}

// Releases OpenTofu installs with a warning, or as "verified checksum",
// give warnings, not errors; a clean one passes.
func TestVerifyWarnsAboutStoredSignatures(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	want := map[string]string{
		"good-ed25519":   "",
		"expired-subkey": "expired on 2024-01-02T00:00:00Z",
		"sums-comment":   `"verified checksum"`,
	}
	for _, c := range testenv.SignatureCorpus(t) {
		text, ok := want[c.Name]
		if !ok {
			continue
		}
		kr, err := pgp.LoadKeyring(c.Key)
		if err != nil {
			t.Fatal(err)
		}
		rel, err := release.ReadProvider(ctx, c.Dir, release.Options{Keys: []*pgp.Keyring{kr}})
		if err != nil {
			t.Fatal(err)
		}
		repo, err := orasoci.New(filepath.Join(dir, c.Name))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rel.Push(ctx, repo, oci.PushOptions{}); err != nil {
			t.Fatal(err)
		}
		f, err := lint.Check(ctx, repo, oci.Reference{Layout: true, Repository: filepath.Join(dir, c.Name), Reference: "1.0.0"}, lint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case hasSeverity(f, lint.SeverityError):
			t.Errorf("%s: %+v", c.Name, f)
		case text == "" && !hasSeverity(f, lint.SeverityOK):
			t.Errorf("%s: clean release flagged: %+v", c.Name, f)
		case text != "" && !hasFinding(f, lint.SeverityWarning, text):
			t.Errorf("%s: want a warning mentioning %q: %+v", c.Name, text, f)
		}
	}
}

// An OpenTofu release pushed by `oci-tofu push tofu` is an image manifest
// but not a module: verify checks it as a release (config, layers,
// digests), and reports a release whose file was altered.
func TestVerifyOpenTofuRelease(t *testing.T) {
	ctx := context.Background()
	repo, err := orasoci.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	kr, err := pgp.LoadKeyring(testenv.Testdata(t, "keys", "gpg-signer.asc"))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := release.ReadTofu(ctx, testenv.Testdata(t, "tofu", "1.9.0"), []*pgp.Keyring{kr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rel.Push(ctx, repo, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, skip := range []bool{false, true} {
		findings, err := lint.Check(ctx, repo, oci.Reference{Layout: true, Repository: "x", Reference: "1.9.0"}, lint.Options{SkipZips: skip})
		if err != nil {
			t.Fatal(err)
		}
		if len(findings) != 1 || findings[0].Severity != lint.SeverityOK {
			t.Errorf("skip zips %v: %+v", skip, findings)
		}
	}
	// Under another version's tag, it is reported.
	desc, err := repo.Resolve(ctx, "1.9.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Tag(ctx, desc, "1.8.0"); err != nil {
		t.Fatal(err)
	}
	findings, err := lint.Check(ctx, repo, oci.Reference{Layout: true, Repository: "x", Reference: "1.8.0"}, lint.Options{SkipZips: true})
	if err != nil || len(findings) != 1 || !strings.Contains(findings[0].Message, `the tag 1.8.0 holds version "1.9.0"`) || strings.Contains(findings[0].Message, "module") {
		t.Errorf("retagged release: %v %+v", err, findings)
	}
}

// verify --policy: a version the policy deprecates is a warning with
// the message; one it revokes an error with it.
func TestVerifyDeprecatedAndRevoked(t *testing.T) {
	ctx := context.Background()
	repo, err := orasoci.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	kr, err := pgp.LoadKeyring(testenv.Testdata(t, "keys", "gpg-signer.asc"))
	if err != nil {
		t.Fatal(err)
	}
	rel, err := release.ReadTofu(ctx, testenv.Testdata(t, "tofu", "1.9.0"), []*pgp.Keyring{kr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rel.Push(ctx, repo, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	for block, want := range map[string]struct {
		sev lint.Severity
		msg string
	}{
		"deprecated": {lint.SeverityWarning, `policy: 1.9.0 is deprecated by rule "tofu": 1.9 gets no fixes`},
		"revoked":    {lint.SeverityError, `policy: denied by rule "tofu": tofu 1.9.0 is revoked by the policy's rule "tofu": 1.9 gets no fixes`},
	} {
		pol, err := policy.Parse([]byte("tofu {\n  "+block+" {\n    versions = \"< 1.10\"\n    message = \"1.9 gets no fixes\"\n  }\n}\n"), "p.hcl")
		if err != nil {
			t.Fatal(err)
		}
		opts := lint.Options{SkipZips: true, Policy: pol, PolicyAddress: func(kind names.Kind) (string, error) { return policy.TofuAddress, nil }}
		findings, err := lint.Check(ctx, repo, oci.Reference{Layout: true, Repository: "x", Reference: "1.9.0"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(findings, func(f lint.Finding) bool { return strings.HasPrefix(f.Message, "policy:") })
		if i < 0 || findings[i].Severity != want.sev || findings[i].Message != want.msg {
			t.Errorf("%s: %+v, want a %s %q", block, findings, want.sev, want.msg)
		}
	}
}

// verify checks the version index a push to a registry writes against
// the tags, and
// says which versions it lacks once another tool tags one: the index's
// own tag is no artifact to judge as a version. (A layout gets none.)
func TestVerifyReportsTheVersionIndex(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	whole := oci.Reference{Registry: reg.Host, Repository: "acme/hello"}
	repo, err := client.Open(whole)
	if err != nil {
		t.Fatal(err)
	}
	rel := seed.Hello(t)
	pushed, err := rel.Push(ctx, repo, oci.PushOptions{})
	if err != nil || rel.VersionIndexNote() != "" {
		t.Fatal(err, rel.VersionIndexNote())
	}
	check := func() []lint.Finding {
		f, err := lint.Check(ctx, repo, whole, lint.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f := check()
	if !hasFinding(f, lint.SeverityOK, "the version index agrees with the tags (versions: 1)") || hasSeverity(f, lint.SeverityWarning) || hasSeverity(f, lint.SeverityError) {
		t.Fatalf("after a push: %+v", f)
	}
	// Another tool tags the same index as 1.1.0: the version index lacks it.
	if err := repo.Tag(ctx, pushed.Root, "1.1.0"); err != nil {
		t.Fatal(err)
	}
	f = check()
	if !hasFinding(f, lint.SeverityWarning, "the version index lacks version 1.1.0") || hasSeverity(f, lint.SeverityError) {
		t.Fatalf("after a copy: %+v", f)
	}
	one, err := lint.Check(ctx, repo, whole.WithReference("oci-tofu.versions"), lint.Options{})
	if err != nil || !hasFinding(one, lint.SeverityWarning, "lacks version 1.1.0") {
		t.Fatalf("the index's tag alone: %+v %v", one, err)
	}
}
