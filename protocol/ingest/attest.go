package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/oci"
)

// Attester signs and attests releases as they are stored: the signature
// and in-toto attestation `push --attest-key` writes (Sigstore bundle
// referrers and cosign's tag schema, attest.Attach). The caller supplies it; ingest and pull-through only say what
// to attest.
type Attester interface {
	// Attest signs root, just stored in repo (named repository,
	// host/path), and writes the attestation of predicate under
	// predicateType.
	Attest(ctx context.Context, repo oci.Repository, repository string, root digest.Digest, predicateType string, predicate any) error
	// AttestOnly writes the attestation of predicate about subject, in
	// repo, without signing subject (attest.AttachAttestation): an SBOM's,
	// whose platform manifest the release's signed index names.
	AttestOnly(ctx context.Context, repo oci.Repository, repository string, subject digest.Digest, predicateType string, predicate any) error
	// Key is the public key the attestations verify with.
	Key() *attest.Verifier
}

// Attestation attests what ingest and pull-through store: each provider
// release with release.ProviderPredicateType, each OpenTofu release with
// release.TofuPredicateType, the predicate made from the release verified
// from its origin, as `push provider` and `push tofu` make it.
type Attestation struct {
	Attester Attester
	// Version is oci-tofu's version, the predicates' verifier.
	Version string
	// Now is when the predicates say the release was verified (default
	// time.Now).
	Now func() time.Time
}

func (a *Attestation) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Provider attests r, verified from its origin and stored in repo (named
// repository) as root.
func (a *Attestation) Provider(ctx context.Context, repo oci.Repository, repository string, r *release.Provider, root ocispec.Descriptor) error {
	pred, err := r.Predicate(ctx, repo, root, nil, a.now().Truncate(time.Second), a.Version)
	if err != nil {
		return fmt.Errorf("%s@%s was stored, but reading it back to attest it failed: %w", repository, root.Digest, err)
	}
	return a.attest(ctx, repo, repository, root, release.ProviderPredicateType, pred)
}

// Tofu attests r, verified from its origin and stored in repo (named
// repository) as root.
func (a *Attestation) Tofu(ctx context.Context, repo oci.Repository, repository string, r *release.Tofu, root ocispec.Descriptor) error {
	return a.attest(ctx, repo, repository, root, release.TofuPredicateType, r.Predicate(repository, a.now().Truncate(time.Second), a.Version))
}

// Module attests a module package pulled from an origin and stored in
// repo (named repository) under tags as root; src says where it came from
// (origin, source URL, git commit), the rest is what push module records.
func (a *Attestation) Module(ctx context.Context, repo oci.Repository, repository string, p *modulepkg.Package, tags []string, root ocispec.Descriptor, src modulepkg.SourcePredicate) error {
	pred := p.Predicate(repository, tags, root.Digest, a.now().Truncate(time.Second), a.Version)
	pred.Source.Path, pred.Source.Origin, pred.Source.URL, pred.Source.Commit = src.Path, src.Origin, src.URL, src.Commit
	return a.attest(ctx, repo, repository, root, modulepkg.PredicateType, pred)
}

func (a *Attestation) attest(ctx context.Context, repo oci.Repository, repository string, root ocispec.Descriptor, predicateType string, pred any) error {
	if err := a.Attester.Attest(ctx, repo, repository, root.Digest, predicateType, pred); err != nil {
		return fmt.Errorf("%s@%s was stored, but signing and attesting it failed: %w", repository, root.Digest, err)
	}
	return nil
}

// SBOM is release.SBOMOptions.Attest for the attester, storing in repo
// (named repository): it attests a platform manifest's SBOM, predicate
// type sbom.SPDXPredicateType with the SPDX document as the predicate
// (`cosign verify-attestation --type spdxjson` checks it), in both forms
// (Attester.AttestOnly: no signature of the platform manifest, which the
// release's signed index names); an SBOM found stored already is attested
// only when the key's attestation of it is not complete.
func (a *Attestation) SBOM(repository string) func(ctx context.Context, repo oci.Repository, manifest digest.Digest, spdx []byte, written bool) (bool, error) {
	return func(ctx context.Context, repo oci.Repository, manifest digest.Digest, spdx []byte, written bool) (bool, error) {
		if !written {
			if ok, err := attest.AttestationComplete(ctx, repo, manifest, a.Attester.Key(), sbom.SPDXPredicateType); err == nil && ok {
				return false, nil
			}
		}
		if err := a.Attester.AttestOnly(ctx, repo, repository, manifest, sbom.SPDXPredicateType, json.RawMessage(spdx)); err != nil {
			return false, err
		}
		return true, nil
	}
}

// Attested reports whether root, held in repo, already carries a
// signature and an attestation of predicateType by the attester's key in
// both forms attest.Attach writes (Sigstore bundle referrers and cosign's
// tag schema): a release found complete is attested again only when it
// does not (after being verified from its origin again), so one attested
// before referrers were written gets them.
func (a *Attestation) Attested(ctx context.Context, repo oci.ReadOnlyRepository, root digest.Digest, predicateType string) bool {
	ok, err := attest.Complete(ctx, repo, root, a.Attester.Key(), predicateType)
	return err == nil && ok
}

// push runs a push with attestWith called before the tags are written
// (and before opts.BeforeTag), so that no client ever sees the release
// tagged and not attested; a release its tags already held (UpToDate) is
// attested after. A nil a just pushes.
func (a *Attestation) push(ctx context.Context, opts oci.PushOptions, push func(oci.PushOptions) (oci.PushResult, error), attestWith func(context.Context, ocispec.Descriptor) error) (oci.PushResult, error) {
	if a == nil {
		return push(opts)
	}
	if before := opts.BeforeTag; before != nil {
		opts.BeforeTag = func(ctx context.Context, root ocispec.Descriptor) error {
			if err := attestWith(ctx, root); err != nil {
				return err
			}
			return before(ctx, root)
		}
	} else {
		opts.BeforeTag = attestWith
	}
	res, err := push(opts)
	if err == nil && res.UpToDate {
		err = attestWith(ctx, res.Root)
	}
	return res, err
}
