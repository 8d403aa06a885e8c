package attest

import (
	"context"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Checker is one requirement on a root's signatures or attestations: an
// attestation by one of some keys (KeyAttestation), a key's signature
// (KeySignature), or one an operator configures beyond cosign keys, whose
// heavier verifiers live in packages of their own that a build may leave
// out — a Notary Project trust policy (convert/attest/notation: serve
// --require-notation, verify --notation, a policy's notation: signers)
// and keyless Sigstore identities (convert/keyless: keyless:ISSUER=IDENTITY
// of --require-attestation, verify --attest-pub and a policy's signers).
// AnyOf combines several into one.
type Checker interface {
	// Name names the requirement in messages and logs.
	Name() string
	// Check says whether subject, a root of predicate type predicateType
	// in repo, meets the requirement: refusal nil when it does, else why
	// not (a hostile or broken signature or attestation is a refusal).
	// repository is its name as clients name it (host/path; for an OCI
	// layout, oci-layout:PATH), which trust policies may be scoped to.
	// err is for failing to read the registry.
	Check(ctx context.Context, repo oci.ReadOnlyRepository, repository string, subject digest.Digest, predicateType string) (refusal, err error)
}

// BundleChecker is a Checker that also verifies a single Sigstore bundle
// as an attestation by the signers it trusts (a keyless identity): those
// are trusted for ingest times too (IngestTrust.Bundles).
type BundleChecker interface {
	Checker
	BundleVerifier
}

// KeyAttestation is the requirement that subject has an attestation of
// its predicate type verifying with one of keys (VerifyAttestation); name
// names it.
func KeyAttestation(name string, keys ...*Verifier) Checker {
	return keyCheck{name: name, check: func(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, predicateType string) (error, error) {
		_, refusal, err := VerifyAttestation(ctx, repo, subject, keys, predicateType)
		return refusal, err
	}}
}

// KeySignature is the requirement that subject carries key's signature
// (VerifySignature), whatever its predicate type; name names it.
func KeySignature(name string, key *Verifier) Checker {
	return keyCheck{name: name, check: func(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, _ string) (error, error) {
		return VerifySignature(ctx, repo, subject, key)
	}}
}

// keyCheck is a Checker of this package's keys.
type keyCheck struct {
	name  string
	check func(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, predicateType string) (refusal, err error)
}

func (k keyCheck) Name() string { return k.name }

func (k keyCheck) Check(ctx context.Context, repo oci.ReadOnlyRepository, _ string, subject digest.Digest, predicateType string) (error, error) {
	return k.check(ctx, repo, subject, predicateType)
}

// Named is c whose refusals begin with its name ("NAME: why").
func Named(c Checker) Checker { return named{c} }

type named struct{ Checker }

func (n named) Check(ctx context.Context, repo oci.ReadOnlyRepository, repository string, subject digest.Digest, predicateType string) (error, error) {
	refusal, err := n.Checker.Check(ctx, repo, repository, subject, predicateType)
	if refusal != nil {
		refusal = fmt.Errorf("%s: %w", n.Name(), refusal)
	}
	return refusal, err
}

// AnyOf combines checks into one that a root meets when it meets any of
// them (as OpenTofu's MultiSource combines provider sources): they are
// asked at once, and the first failure to read the registry is the error.
// When none is met, the refusal is lacking — what the root lacks — then,
// in parentheses, each check's refusal in the order given, separated by
// "; ".
func AnyOf(lacking string, checks ...Checker) Checker {
	return anyOf{lacking: lacking, checks: checks}
}

type anyOf struct {
	lacking string
	checks  []Checker
}

// Name names each requirement, "or" between them.
func (a anyOf) Name() string {
	names := make([]string, len(a.checks))
	for i, c := range a.checks {
		names[i] = c.Name()
	}
	return strings.Join(names, " or ")
}

func (a anyOf) Check(ctx context.Context, repo oci.ReadOnlyRepository, repository string, subject digest.Digest, predicateType string) (error, error) {
	why := make([]error, len(a.checks))
	g, gctx := errgroup.WithContext(ctx)
	for i, c := range a.checks {
		g.Go(func() (err error) {
			why[i], err = c.Check(gctx, repo, repository, subject, predicateType)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	reasons := make([]string, 0, len(why))
	for _, w := range why {
		if w == nil {
			return nil, nil
		}
		reasons = append(reasons, w.Error())
	}
	return fmt.Errorf("%s (%s)", a.lacking, strings.Join(reasons, "; ")), nil
}
