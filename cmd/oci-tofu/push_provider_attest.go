package main

import (
	"context"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
)

// attestWhileTagging starts signing and attesting the release's root as
// soon as the root and everything it names are written (the push's
// BeforeTag), so the attachments' round trips and settling overlap the
// version tags' writes and settling instead of following them. wait
// returns its result once the push is done; attested is false when the
// push wrote nothing (up to date: BeforeTag is not called), and the
// caller attests afterwards as before.
type attestWhileTagging struct {
	done chan error
}

// hook is the push's BeforeTag: it starts attest and returns at once.
func (a *attestWhileTagging) hook(attest func(ctx context.Context, root ocispec.Descriptor) error) func(context.Context, ocispec.Descriptor) error {
	return func(ctx context.Context, root ocispec.Descriptor) error {
		a.done = make(chan error, 1)
		go func() { a.done <- attest(ctx, root) }()
		return nil
	}
}

// wait is the attestation's result, once it has finished.
func (a *attestWhileTagging) wait() (attested bool, err error) {
	if a.done == nil {
		return false, nil
	}
	return true, <-a.done
}

// pushAndAttestProvider pushes rel and, with a signer, signs and attests
// its root (attestProvider) while the tags are written; a release already
// up to date is attested after the push. err is the push's, attestErr the
// attestation's (not tried when the push failed before writing the root).
func pushAndAttestProvider(c *cli.Context, rep *reporter, repo oci.Repository, ref oci.Reference, rel *release.Provider, opts release.Options, signer *attest.Signer, also []string) (res oci.PushResult, err, attestErr error) {
	po := pushOptions(c, rep)
	var during attestWhileTagging
	if signer != nil {
		po.BeforeTag = during.hook(func(ctx context.Context, root ocispec.Descriptor) error {
			return attestProvider(c, rep, repo, ref, rel, root, opts, signer)
		})
	}
	res, err = rel.Push(c.Context, repo, po, also...)
	attested, attestErr := during.wait()
	if err != nil || signer == nil || attested {
		return res, err, attestErr
	}
	return res, nil, attestProvider(c, rep, repo, ref, rel, res.Root, opts, signer)
}
