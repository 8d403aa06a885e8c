package proxy

import (
	"context"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
	"github.com/opencontainers/go-digest"
)

// catalogFacts are what a provider's catalogue page reads of a release
// beyond the release itself, each what the server decides with: the
// policy in force, the vulnerability database, the attestation rule's
// verdict (the gate's, cached by the store), --require-keyless's
// verifier and the page's record of downloads.
func (s *Server) catalogFacts() catalog.ProviderFacts {
	o := &s.opts
	f := catalog.ProviderFacts{Vulns: o.VulnDB, Usage: s.catalogUsage}
	if o.Policy != nil {
		f.Policy = o.Policy.Current
		f.Signers = func(ctx context.Context, address string, root source.Root) ([]catalog.SignerVerdict, error) {
			return s.signerVerdicts(ctx, address, root)
		}
	}
	if j := s.judge(); j.Admitted != nil {
		f.Admission = func(ctx context.Context, root source.Root) (*catalog.Admission, error) {
			return catalogAdmission(ctx, j.Admitted, root)
		}
	}
	if v, ok := o.RequireKeyless.(keylessSigners); ok {
		f.Keyless = func(ctx context.Context, root source.Root) (*catalog.KeylessSigner, error) {
			return keylessSigner(ctx, v, root)
		}
	}
	return f
}

// signerVerdicts are the gate's verdicts on the signers the policy's
// rule deciding address requires of the release at root: the facts the
// gate reads for that rule (gate.Policy.ReadFacts, cached per root and
// signer), its signers alone.
func (s *Server) signerVerdicts(ctx context.Context, address string, root source.Root) ([]catalog.SignerVerdict, error) {
	pol := s.opts.Policy.Current()
	n := pol.Needs(names.KindProvider, address)
	if len(n.Signers) == 0 {
		return nil, nil
	}
	f, err := s.judge().ReadFacts(ctx, pol, names.KindProvider, policy.Needs{Rule: n.Rule, Signers: n.Signers}, root)
	if err != nil {
		return nil, err
	}
	out := make([]catalog.SignerVerdict, len(n.Signers))
	for i, sg := range n.Signers {
		out[i] = catalog.SignerVerdict{Signer: sg.Spec, Kind: sg.Kind, Signed: f.Signed[sg.Spec], Why: f.Why[sg.Spec]}
	}
	return out, nil
}

// catalogAdmission is the attestation rule's word on a provider release
// at root, as the gate asks it (gate.Policy.Admitted).
func catalogAdmission(ctx context.Context, admitted func(context.Context, names.Kind, source.Root) error, root source.Root) (*catalog.Admission, error) {
	a := &catalog.Admission{PredicateType: attest.PredicateType(names.KindProvider)}
	err := admitted(ctx, names.KindProvider, root)
	if r, refused := store.Refused(err); refused {
		a.Reason = r.Reason
		return a, nil
	}
	if err != nil {
		return nil, err
	}
	a.Admitted = true
	return a, nil
}

// keylessSigners is --require-keyless's verifier naming who signed
// (keyless.Verifier.SignerOf), asked through this interface so that a
// build without keyless verification leaves convert/keyless out.
type keylessSigners interface {
	SignerOf(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, predicateType string) (issuer, identity string, refusal, err error)
}

// keylessSigner is the identity of the keyless attestation of the
// release at root that v accepts (nil: none), read once per root.
func keylessSigner(ctx context.Context, v keylessSigners, root source.Root) (*catalog.KeylessSigner, error) {
	val, err := root.Repo.Described(ctx, "the keyless signer", root.Digest, func(ctx context.Context, repo oci.ReadOnlyRepository, _ string) (any, int64, error) {
		issuer, identity, refusal, err := v.SignerOf(ctx, repo, root.Digest, attest.PredicateType(names.KindProvider))
		if err != nil {
			return nil, 0, err
		}
		if refusal != nil {
			return (*catalog.KeylessSigner)(nil), 16, nil
		}
		return &catalog.KeylessSigner{Issuer: issuer, Identity: identity}, int64(64 + len(issuer) + len(identity)), nil
	})
	if err != nil {
		return nil, err
	}
	ks, _ := val.(*catalog.KeylessSigner)
	return ks, nil
}

// fleetUsage is a shared cache that keeps the fleet's usage of each
// address and version (sharedstate.Redis).
type fleetUsage interface {
	Usage(ctx context.Context, kind, address string, now time.Time) (sharedstate.AddressUsage, error)
	VersionUsage(ctx context.Context, kind, address, version string, now time.Time) (sharedstate.AddressUsage, error)
}

// catalogUsage is an address's downloads and its version's: the
// fleet's, when the fleet shares a Redis that counts them (every replica
// adds its counts every countsFlushEvery), else this process's page's,
// both from the audit trail.
func (s *Server) catalogUsage(ctx context.Context, kind names.Kind, address, version string) (*catalog.UsageCounts, error) {
	if fu, ok := s.opts.Shared.(fleetUsage); ok && s.counts != nil {
		return fleetUsageOf(ctx, fu, string(kind), address, version, s.opts.Now())
	}
	u := s.page.Usage(string(kind), address, version)
	v := u.Version
	return &catalog.UsageCounts{Week: u.Week, Month: u.Month, Clients: u.Clients, More: u.More, From: "this replica's audit trail",
		Version: &catalog.VersionCounts{Version: version, Week: v.Week, Month: v.Month, Clients: v.Clients, More: v.More, Partial: v.Partial}}, nil
}

// fleetUsageOf is the fleet's usage of address and its version.
func fleetUsageOf(ctx context.Context, fu fleetUsage, kind, address, version string, now time.Time) (*catalog.UsageCounts, error) {
	u, err := fu.Usage(ctx, kind, address, now)
	if err != nil {
		return nil, err
	}
	v, err := fu.VersionUsage(ctx, kind, address, version, now)
	if err != nil {
		return nil, err
	}
	return &catalog.UsageCounts{Week: uint64(u.Week), Month: uint64(u.Month), Clients: u.Clients, More: u.More, From: "the fleet's shared counts",
		Version: &catalog.VersionCounts{Version: version, Week: uint64(v.Week), Month: uint64(v.Month), Clients: v.Clients, More: v.More}}, nil
}
