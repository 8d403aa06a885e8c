package release

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// ProviderPredicateType is the in-toto predicate type of the attestation
// `push provider --attest-key` writes (docs/artifacts.md).
const ProviderPredicateType = "https://oci-tofu.dev/attestations/provider-release/v1"

// ProviderPredicate records what oci-tofu verified before pushing a
// provider release: the publisher's signature and SHA256SUMS, and every
// platform's hashes as stored.
type ProviderPredicate struct {
	Type       string `json:"type"`
	Version    string `json:"version"`
	Repository string `json:"repository"`
	// Signature is "verified" (by the publisher's key), "signed" (made at
	// push time with --sign-key) or "unsigned" (--unsigned).
	Signature       string                       `json:"signature"`
	KeyIDs          []string                     `json:"signing_key_ids"`
	KeyFingerprints []string                     `json:"signing_key_fingerprints"`
	SHA256SUMS      *FileDigest                  `json:"sha256sums,omitempty"`
	SHA256SUMSSig   *FileDigest                  `json:"sha256sums_signature,omitempty"`
	Platforms       map[string]PlatformPredicate `json:"platforms"`
	VerifiedAt      string                       `json:"verified_at"`
	Verifier        Verifier                     `json:"verifier"`
	Warnings        []string                     `json:"warnings"`
}

// FileDigest names a file and its sha256.
type FileDigest struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// PlatformPredicate is one platform's package: its file and hashes.
type PlatformPredicate struct {
	Filename string `json:"filename"`
	H1       string `json:"h1"`
	ZH       string `json:"zh"`
}

// Verifier names the program that verified the release.
type Verifier struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Predicate is what the attestation of rel, pushed to repo as root, says:
// the h1 hashes are read back from the provenance stored with root (what
// was pushed, whichever way the push went), the rest comes from rel.
func (rel *Provider) Predicate(ctx context.Context, repo oci.ReadOnlyRepository, root ocispec.Descriptor, signer *pgp.Signer, at time.Time, version string) (*ProviderPredicate, error) {
	h1 := rel.pushedH1(root.Digest)
	var err error
	if h1 == nil {
		h1, err = storedH1(ctx, repo, root)
	}
	if err != nil {
		return nil, err
	}
	p := &ProviderPredicate{
		Type: rel.Type, Version: rel.Version, Repository: rel.Repository,
		Signature: rel.signatureKind(signer), KeyIDs: nonNilStrings(rel.KeyIDs),
		SHA256SUMS: fileDigest(rel.Files.SHA256SUMS), SHA256SUMSSig: fileDigest(rel.Files.Signature),
		Platforms:  map[string]PlatformPredicate{},
		VerifiedAt: at.UTC().Format(time.RFC3339),
		Verifier:   Verifier{Name: "oci-tofu", Version: version},
		Warnings:   nonNilStrings(rel.Warnings),
	}
	if p.KeyFingerprints, err = fingerprints(rel.Files.Keys, rel.KeyIDs); err != nil {
		return nil, err
	}
	for _, pkg := range rel.Packages {
		name := pkg.Platform.String()
		if h1[name] == "" {
			return nil, fmt.Errorf("the provenance stored with %s has no h1 for %s", root.Digest, name)
		}
		p.Platforms[name] = PlatformPredicate{Filename: pkg.Filename, H1: h1[name], ZH: "zh:" + pkg.SHA256}
	}
	return p, nil
}

// builtRelease is the root Push built and the h1 hashes it put into its
// provenance.
type builtRelease struct {
	root digest.Digest
	h1   map[names.Platform]string
}

// pushedH1 are the h1 hashes Push built into root, nil when Push did not
// build root itself. Content addressing makes them the stored ones: a
// root with this digest holds exactly the provenance Push built, so
// reading it back (storedH1: the index, the provenance manifest and its
// blobs) would only cost round trips.
func (rel *Provider) pushedH1(root digest.Digest) map[string]string {
	if rel.pushed == nil || rel.pushed.root != root {
		return nil
	}
	out := map[string]string{}
	for p, h := range rel.pushed.h1 {
		out[p.String()] = h
	}
	return out
}

// storedH1 are the h1 hashes of the provenance stored with root.
func storedH1(ctx context.Context, repo oci.ReadOnlyRepository, root ocispec.Descriptor) (map[string]string, error) {
	pv, err := oci.ReadProviderIndex(ctx, repo, root)
	if err != nil {
		return nil, err
	}
	if pv.Provenance == nil {
		return nil, fmt.Errorf("%s has no provenance", root.Digest)
	}
	prov, _, err := oci.ReadProvenance(ctx, repo, *pv.Provenance)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for name, p := range prov.Platforms {
		out[name] = p.H1
	}
	return out, nil
}

// signatureKind says how SHA256SUMS came to be signed (see ProviderPredicate).
func (rel *Provider) signatureKind(signer *pgp.Signer) string {
	switch {
	case len(rel.KeyIDs) == 0:
		return "unsigned"
	case signer != nil && rel.KeyIDs[0] == signer.KeyID():
		return "signed"
	}
	return "verified"
}

// fingerprints are the full fingerprints (upper-case hex) of the keys,
// among those stored, whose ids signed the release.
func fingerprints(keys oci.NamedBytes, ids []string) ([]string, error) {
	out := []string{}
	if keys.Data == nil {
		return out, nil
	}
	kr, err := pgp.ReadKeyring(keys.Name, keys.Data)
	if err != nil {
		return nil, err
	}
	for _, e := range kr.Entities {
		if slices.Contains(ids, pgp.KeyID(e.PrimaryKey.KeyId)) {
			out = append(out, strings.ToUpper(fmt.Sprintf("%x", e.PrimaryKey.Fingerprint)))
		}
	}
	return out, nil
}

func fileDigest(f oci.NamedBytes) *FileDigest {
	if f.Data == nil {
		return nil
	}
	return &FileDigest{Name: f.Name, SHA256: digest.FromBytes(f.Data).Encoded()}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
