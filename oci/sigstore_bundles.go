package oci

import (
	"context"
	"errors"
	"fmt"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"
)

// Sigstore bundles stored beside a subject, as cosign v3 stores keyless
// signatures and attestations: each is a referrer of the subject (an
// image manifest whose subject is it) with artifact type
// MediaTypeSigstoreBundle and the bundle as its layer. Registries without
// the OCI 1.1 referrers API hold them in the referrers tag schema (an
// index tagged sha256-<hex>); oras-go reads either.

// MediaTypeSigstoreBundle is the artifact and layer media type of a
// Sigstore bundle v0.3 (older bundles name their version as a parameter
// of "application/vnd.dev.sigstore.bundle+json").
const MediaTypeSigstoreBundle = "application/vnd.dev.sigstore.bundle.v0.3+json"

// MaxSigstoreBundles bounds the bundles read beside one subject.
const MaxSigstoreBundles = MaxAttachmentLayers

// errEnoughReferrers stops listing referrers once enough are seen.
var errEnoughReferrers = errors.New("enough referrers")

// ReadSigstoreBundles reads the Sigstore bundles that are referrers of
// subject: at most MaxSigstoreBundles (more are left unread), each
// manifest and bundle bounded by MaxSmallFile and checked against its
// digest. None (and no error) when there are none.
func ReadSigstoreBundles(ctx context.Context, repo ReadOnlyRepository, subject ocispec.Descriptor) ([][]byte, error) {
	descs, err := bundleReferrers(ctx, repo, subject)
	if err != nil {
		return nil, fmt.Errorf("listing the referrers of %s: %w", subject.Digest, err)
	}
	var out [][]byte
	for _, d := range descs {
		b, err := readBundleManifest(ctx, repo, d)
		if err != nil {
			return nil, err
		}
		if b != nil {
			out = append(out, b)
		}
	}
	return out, nil
}

// bundleReferrers lists subject's referrers of a bundle artifact type,
// stopping at MaxSigstoreBundles.
func bundleReferrers(ctx context.Context, repo ReadOnlyRepository, subject ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	var descs []ocispec.Descriptor
	keep := func(page []ocispec.Descriptor) error {
		for _, d := range page {
			if isBundleType(d.ArtifactType) {
				descs = append(descs, d)
			}
			if len(descs) == MaxSigstoreBundles {
				return errEnoughReferrers
			}
		}
		return nil
	}
	var err error
	if lister, ok := repo.(registry.ReferrerLister); ok {
		err = lister.Referrers(ctx, subject, "", keep)
	} else if graph, ok := repo.(content.ReadOnlyGraphStorage); ok {
		var all []ocispec.Descriptor
		if all, err = registry.Referrers(ctx, graph, subject, ""); err == nil {
			err = keep(all)
		}
	}
	if errors.Is(err, errEnoughReferrers) || IsNotFound(err) {
		err = nil
	}
	return descs, err
}

// readBundleManifest reads a referrer manifest and returns its bundle
// layer; nil when it has none.
func readBundleManifest(ctx context.Context, repo ReadOnlyRepository, d ocispec.Descriptor) ([]byte, error) {
	if d.MediaType != ocispec.MediaTypeImageManifest || d.Size > MaxManifestSize {
		return nil, nil
	}
	b, err := fetchSmall(ctx, repo, d)
	if err != nil {
		return nil, err
	}
	m, err := decodeManifest(d, b)
	if err != nil {
		return nil, err
	}
	for _, l := range m.Layers {
		if isBundleType(l.MediaType) {
			return fetchSmall(ctx, repo, l)
		}
	}
	return nil, nil
}

func isBundleType(t string) bool {
	return strings.HasPrefix(t, "application/vnd.dev.sigstore.bundle")
}
