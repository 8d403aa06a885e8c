package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/convert/publish"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
)

// Attestation attests what ingest and pull-through store: each provider
// release with release.ProviderPredicateType, each OpenTofu release with
// release.TofuPredicateType, the predicate made from the release verified
// from its origin, as `push provider` and `push tofu` make it.
type Attestation struct {
	Attester publish.Attester
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
// (named repository): publish.SBOMAttestation.
func (a *Attestation) SBOM(repository string) release.SBOMAttester {
	return publish.SBOMAttestation(a.Attester, repository)
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

// root is the RootAttester of publish.Push for a release stored in
// repository, attested by attestWith: all of it before the tags are
// written (and before the push's own BeforeTag), so that no client ever
// sees the release tagged and not attested; a release its tags already
// held (UpToDate) is attested after. A nil a attests nothing (nil).
func (a *Attestation) root(attestWith func(context.Context, ocispec.Descriptor) error) publish.RootAttester {
	if a == nil {
		return nil
	}
	return beforeTags(attestWith)
}

// beforeTags attests a root wholly before its tags, or, up to date,
// after the push.
type beforeTags func(context.Context, ocispec.Descriptor) error

func (b beforeTags) BeforeTag(ctx context.Context, _ oci.Repository, root ocispec.Descriptor) (func(context.Context) error, error) {
	return nil, b(ctx, root)
}

func (b beforeTags) UpToDate(ctx context.Context, _ oci.Repository, root ocispec.Descriptor) error {
	return b(ctx, root)
}

// push is publish.Push of rel with a's attestation (root), its errors
// one: the push's, else the attestation's after it.
func (a *Attestation) push(ctx context.Context, repo oci.Repository, rel publish.Release, opts oci.PushOptions, attestWith func(context.Context, ocispec.Descriptor) error) (oci.PushResult, error) {
	res, err, attestErr := publish.Push(ctx, repo, rel, opts, a.root(attestWith))
	if err == nil {
		err = attestErr
	}
	return res, err
}
