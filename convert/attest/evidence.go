package attest

import (
	"context"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// evidence is what a subject's signatures and attestations are judged
// from: the Sigstore bundles among its OCI 1.1 referrers (cosign v3's
// default), and cosign's tag-schema attachments (.sig, .att). Reading
// prefers the bundles and falls back to the tag schema; both are read at
// once, so the referrers cost no round trip after the tag schema's.
type evidence struct {
	bundles    attach.Referrers
	bundlesErr error // the listing could not be read: a refusal reason
	sigs, atts []attach.AttachmentLayer
	// sigsErr and attsErr are content problems of the attachments
	// (too large, corrupt): refusal reasons.
	sigsErr, attsErr error
	// failed is the registry failing while the referrers were listed:
	// an error, unless the tag schema gives a verdict.
	failed error
}

// readEvidence reads subject's bundles, its .att attachment when
// withAtts and its .sig attachment when withSigs, concurrently. err is
// the registry failing to answer the tag-schema reads.
func readEvidence(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest, withAtts, withSigs bool) (*evidence, error) {
	ev := &evidence{}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var err error
		ev.bundles, err = attach.ReadReferrers(gctx, repo, subject, attach.ArtifactTypeSigstoreBundle)
		switch {
		case err == nil:
		case oci.IsContentProblem(err):
			ev.bundlesErr = readProblem(err, "the referrers of "+subject.String())
		default:
			ev.failed = err
		}
		return nil
	})
	read := func(kind attach.AttachmentKind, layers *[]attach.AttachmentLayer, problem *error) func() error {
		return func() error {
			var err error
			*layers, err = attach.ReadAttachment(gctx, repo, subject, kind)
			if err != nil && oci.IsContentProblem(err) {
				*problem, err = readProblem(err, attach.AttachmentTag(subject, kind)), nil
			}
			return err
		}
	}
	if withAtts {
		g.Go(read(attach.CosignAttestations, &ev.atts, &ev.attsErr))
	}
	if withSigs {
		g.Go(read(attach.CosignSignatures, &ev.sigs, &ev.sigsErr))
	}
	return ev, g.Wait()
}

// readProblem words a content problem: our own checks' words (too many
// layers, a layer too large) as they are; the registry's, which may name
// its hosts, by their class only.
func readProblem(err error, what string) error {
	if oci.Classify(err) == oci.FailureInvalid {
		return err
	}
	return fmt.Errorf("%s cannot be read intact (%s)", what, oci.Classify(err))
}

// bundleStatement is the statement of the first bundle signed by v about
// subject with predicateType; otherwise why there is none (nil when
// there are no bundles at all).
func (ev *evidence) bundleStatement(v *Verifier, subject digest.Digest, predicateType string) (*Statement, error) {
	if ev.bundlesErr != nil {
		return nil, ev.bundlesErr
	}
	var why error
	for _, r := range ev.bundles.Items {
		st, err := openBundleReferrer(r, v)
		switch {
		case err != nil:
			if why == nil || !errors.Is(err, errNotByKey) {
				why = err
			}
		case !st.covers(subject):
			why = fmt.Errorf("the key's bundle %s is about another subject, not %s", r.Descriptor.Digest, subject)
		case st.PredicateType != predicateType:
			if why == nil || errors.Is(why, errNotByKey) {
				why = fmt.Errorf("the key's bundles have predicate type %s, not %s", st.PredicateType, predicateType)
			}
		default:
			return st, nil
		}
	}
	if why != nil && ev.bundles.Truncated {
		why = fmt.Errorf("%w (more than %d bundles refer to %s: the first %d were read)", why, attach.MaxReferrers, subject, attach.MaxReferrers)
	}
	return nil, why
}

// judge combines the bundles' verdict with the tag schema's: the bundles
// first; the tag schema's reason when there were no bundles; both when
// neither verifies. A failure to list the referrers is an error then.
func (ev *evidence) judge(bundle func() (*Statement, error), tags func() (*Statement, error)) (*Statement, error, error) {
	st, bundleWhy := bundle()
	if st != nil {
		return st, nil, nil
	}
	st, tagWhy := tags()
	switch {
	case tagWhy == nil:
		return st, nil, nil
	case ev.failed != nil:
		return nil, nil, ev.failed
	case bundleWhy == nil:
		return nil, tagWhy, nil
	}
	return nil, fmt.Errorf("bundles: %w; %w", bundleWhy, tagWhy), nil
}

// signature judges v's signature of subject: a bundle of cosign's sign
// predicate type, else a .sig layer.
func (ev *evidence) signature(v *Verifier, subject digest.Digest) (error, error) {
	_, why, err := ev.judge(func() (*Statement, error) {
		return ev.bundleStatement(v, subject, CosignSignPredicateType)
	}, func() (*Statement, error) {
		if ev.sigsErr != nil {
			return nil, fmt.Errorf("signature: %w", ev.sigsErr)
		}
		return nil, verifySignatures(ev.sigs, v, subject)
	})
	return why, err
}

// attestation judges v's attestation of subject with predicateType: a
// bundle, else an .att layer.
func (ev *evidence) attestation(v *Verifier, subject digest.Digest, predicateType string) (*Statement, error, error) {
	return ev.judge(func() (*Statement, error) {
		return ev.bundleStatement(v, subject, predicateType)
	}, func() (*Statement, error) {
		if ev.attsErr != nil {
			return nil, fmt.Errorf("attestation: %w", ev.attsErr)
		}
		return verifyAttestations(ev.atts, v, subject, predicateType)
	})
}
