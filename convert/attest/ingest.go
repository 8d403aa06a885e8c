package attest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// BundleVerifier verifies a Sigstore bundle as an attestation by other
// means than a key of this package: a keyless identity under a trusted
// root (convert/keyless), which a build may leave out.
type BundleVerifier interface {
	// VerifyBundle returns the statement of bundleJSON (a Sigstore
	// bundle, at most oci.MaxSmallFile bytes) when it is an attestation
	// of subject with predicateType by a signer the verifier trusts;
	// otherwise why not.
	VerifyBundle(bundleJSON []byte, subject digest.Digest, predicateType string) (*Statement, error)
}

// IngestTrust is who is trusted to say when a release entered the
// registry: attestations by Keys (in Sigstore bundles or cosign's tag
// schema) and Sigstore bundles Bundles verify (keyless identities).
type IngestTrust struct {
	Keys    []*Verifier
	Bundles []BundleVerifier
}

// EarliestIngest reads subject's attestations once, with the reader
// admission uses — the Sigstore bundles among its referrers and its .att
// attachment, at once and bounded (readEvidence) — and returns the
// earliest ingest time (IngestTime) an attestation of subject with
// predicateType by one of trust's signers records: zero when none does.
// Broken or hostile attachments give no time (they are no verdict of a
// trusted signer); err is the registry failing to answer either read,
// the referrers' listing included: the earliest time cannot be known then.
func EarliestIngest(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, trust IngestTrust, predicateType string) (time.Time, error) {
	if len(trust.Keys) == 0 && len(trust.Bundles) == 0 {
		return time.Time{}, nil
	}
	ev, err := readEvidence(ctx, repo, subject, true, false)
	if err == nil {
		err = ev.failed
	}
	if err != nil {
		return time.Time{}, err
	}
	var first time.Time
	for _, st := range ev.trustedStatements(trust, subject, predicateType) {
		if t, ok := IngestTime(st); ok && (first.IsZero() || t.Before(first)) {
			first = t
		}
	}
	return first, nil
}

// trustedStatements are every statement of subject with predicateType
// that trust's signers made, in the bundles and the .att layers.
func (ev *evidence) trustedStatements(trust IngestTrust, subject digest.Digest, predicateType string) []*Statement {
	var out []*Statement
	keep := func(st *Statement, err error) {
		if err == nil && st != nil && st.covers(subject) && st.PredicateType == predicateType {
			out = append(out, st)
		}
	}
	if ev.bundlesErr == nil {
		for _, r := range ev.bundles.Items {
			for _, k := range trust.Keys {
				keep(openBundleReferrer(r, k))
			}
			raw, err := bundleLayer(r)
			if err != nil {
				continue
			}
			for _, b := range trust.Bundles {
				keep(b.VerifyBundle(raw, subject, predicateType))
			}
		}
	}
	if ev.attsErr == nil {
		for _, l := range ev.atts {
			for _, k := range trust.Keys {
				if l.MediaType == attach.MediaTypeDSSEEnvelope {
					keep(openStatement(k, l.Payload))
				}
			}
		}
	}
	return out
}

// VerifyBundles reads subject's Sigstore bundle referrers with the reader
// admission's key checks use (readEvidence: bounded) and returns the
// statement of the first that v verifies as an attestation of subject
// with predicateType. When none does, refusal says why (a broken or
// hostile referrer is a refusal, never an error); err is for failing to
// read the registry.
func VerifyBundles(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, v BundleVerifier, predicateType string) (st *Statement, refusal, err error) {
	ev, err := readEvidence(ctx, repo, subject, false, false)
	if err == nil {
		err = ev.failed
	}
	if err != nil {
		return nil, nil, err
	}
	if ev.bundlesErr != nil {
		return nil, ev.bundlesErr, nil
	}
	var why []string
	for _, r := range ev.bundles.Items {
		raw, err := bundleLayer(r)
		if err == nil {
			if st, err = v.VerifyBundle(raw, subject, predicateType); err == nil {
				return st, nil, nil
			}
		}
		if !slices.Contains(why, err.Error()) {
			why = append(why, err.Error())
		}
	}
	if len(why) == 0 {
		return nil, fmt.Errorf("no Sigstore bundle refers to %s", subject), nil
	}
	refusal = errors.New(strings.Join(why, "; "))
	if ev.bundles.Truncated {
		refusal = fmt.Errorf("%w (more than %d bundles refer to %s: the first %d were read)", refusal, attach.MaxReferrers, subject, attach.MaxReferrers)
	}
	return nil, refusal, nil
}
