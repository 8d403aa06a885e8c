package main

import (
	"context"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
)

// attestWhileTagging signs and attests the release's root as soon as the
// root and everything it names are written (the push's BeforeTag): the
// signature and attestation are made and written as referrers of the
// root (attest.Attachments.Refer) before any tag is, so a reader never
// finds the version tagged without them; their tag-schema form is
// written while the tags are (Attachments.Tag), its round trips and
// settling overlapping the version tags' writes and settling. wait
// returns the tag schema's result once the push is done; attested is
// false when the push wrote nothing (up to date: BeforeTag is not
// called), and the caller attests afterwards as before.
type attestWhileTagging struct {
	done chan error
}

// hook is the push's BeforeTag: it makes the attachments and writes the
// referrers (an error ends the push with nothing tagged), then starts
// writing the tag schema and returns.
func (a *attestWhileTagging) hook(prepare func(ctx context.Context, root ocispec.Descriptor) (*attest.Attachments, error), repo oci.Repository, report func(digest.Digest, attest.Attached)) func(context.Context, ocispec.Descriptor) error {
	return func(ctx context.Context, root ocispec.Descriptor) error {
		at, err := prepare(ctx, root)
		if err != nil {
			return err
		}
		sigRef, attRef, err := at.Refer(ctx, repo)
		if err != nil {
			return fmt.Errorf("signing and attesting %s failed: %w", root.Digest, err)
		}
		a.done = make(chan error, 1)
		go func() {
			tagged, err := at.Tag(ctx, repo)
			if err == nil {
				tagged.SignatureReferrer, tagged.AttestationReferrer = sigRef, attRef
				report(root.Digest, tagged)
			}
			a.done <- err
		}()
		return nil
	}
}

// wait is the tag schema's result, once it has been written.
func (a *attestWhileTagging) wait() (attested bool, err error) {
	if a.done == nil {
		return false, nil
	}
	return true, <-a.done
}

// pushAndAttestProvider pushes rel and, with a signer, signs and attests
// its root (provider predicate) before the tags are written
// (attestWhileTagging); a release already up to date is attested after
// the push. err is the push's (a failure to make the attestation or
// write its referrers is one: nothing was tagged), attestErr the tag
// schema's.
func pushAndAttestProvider(c *cli.Context, rep *reporter, repo oci.Repository, ref oci.Reference, rel *release.Provider, opts release.Options, signer *attest.Signer, also []string) (res oci.PushResult, err, attestErr error) {
	po := pushOptions(c, rep)
	var during attestWhileTagging
	if signer != nil {
		prepare := func(ctx context.Context, root ocispec.Descriptor) (*attest.Attachments, error) {
			pred, err := providerPredicate(c, repo, ref, rel, root, opts)
			if err != nil {
				return nil, err
			}
			return attest.Sign(signer, ref.Name(), root.Digest, release.ProviderPredicateType, pred)
		}
		po.BeforeTag = during.hook(prepare, repo, func(root digest.Digest, at attest.Attached) {
			reportAttached(rep, root, at, release.ProviderPredicateType)
		})
	}
	res, err = rel.Push(c.Context, repo, po, also...)
	attested, attestErr := during.wait()
	if err != nil || signer == nil || attested {
		return res, err, attestErr
	}
	return res, nil, attestProvider(c, rep, repo, ref, rel, res.Root, opts, signer)
}
