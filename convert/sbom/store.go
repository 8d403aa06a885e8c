package sbom

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// Where SBOMs are stored: each as an OCI 1.1 referrer of the platform
// manifest it describes, artifact type SPDXMediaType, one layer holding
// the SPDX JSON — where Trivy, cosign and policy engines look for them
// (a registry without the referrers API lists it in the sha256-<hex>
// index oras-go keeps, as the signatures are; `regctl image copy
// --referrers` and `oras cp -r` copy it).

// ErrNoSBOM is Read's answer for a platform manifest without an SBOM.
var ErrNoSBOM = errors.New("no SBOM is stored for it")

// ErrBadSBOM is in Read's error when SBOM referrers are stored but none
// could be read or parsed (the registry answering about the referrers
// themselves failed otherwise).
var ErrBadSBOM = errors.New("no stored SBOM could be read")

// AnnotationCreated is the SBOM's creation time, as the document says.
const AnnotationCreated = ocispec.AnnotationCreated

// Attach stores the SPDX document spdx as a referrer of subject (a
// platform manifest in repo), unless one with the same bytes is there
// already: written is false then, and Attach wrote nothing.
func Attach(ctx context.Context, repo oci.Repository, subject digest.Digest, spdx []byte, created time.Time) (d ocispec.Descriptor, written bool, err error) {
	held, err := attach.ReadReferrers(ctx, repo, subject, SPDXMediaType)
	if err != nil {
		return ocispec.Descriptor{}, false, err
	}
	for _, r := range held.Items {
		if r.Err == nil && len(r.Layers) == 1 && bytes.Equal(r.Layers[0].Payload, spdx) {
			return r.Descriptor, false, nil
		}
	}
	d, err = Write(ctx, repo, ocispec.Descriptor{Digest: subject}, spdx, created)
	return d, err == nil, err
}

// Write stores the SPDX document spdx as a referrer of subject (its media
// type and size are asked of repo when not given) without looking for
// one there first (Attach does): for a caller that has just found none
// (Read), or has just written the subject. The referrer is the same
// manifest for the same document and time, so writing it twice stores it
// once.
func Write(ctx context.Context, repo oci.Repository, subject ocispec.Descriptor, spdx []byte, created time.Time) (ocispec.Descriptor, error) {
	layer := attach.AttachmentLayer{MediaType: SPDXMediaType, Payload: spdx}
	d, err := attach.WriteReferrer(ctx, repo, subject, SPDXMediaType, []attach.AttachmentLayer{layer},
		map[string]string{AnnotationCreated: created.UTC().Format(time.RFC3339)})
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("storing the SBOM of %s: %w", subject.Digest, err)
	}
	return d, nil
}

// Stored is an SBOM read from the registry: its bytes, what they say,
// and the referrer that holds them.
type Stored struct {
	SPDX     []byte
	Doc      *Document
	Referrer ocispec.Descriptor
}

// Read reads the SBOM stored for subject (a platform manifest): of
// several, the newest that parses (by AnnotationCreated, then digest).
// ErrNoSBOM when there is none; a referrer that does not parse is
// skipped, and its error returned only when no other does.
func Read(ctx context.Context, repo oci.ReadOnlyRepository, subject digest.Digest) (*Stored, error) {
	held, err := attach.ReadReferrers(ctx, repo, subject, SPDXMediaType)
	if err != nil {
		return nil, err
	}
	items := slices.Clone(held.Items)
	slices.SortFunc(items, func(a, b attach.Referrer) int {
		if c := compareStrings(b.Annotations[AnnotationCreated], a.Annotations[AnnotationCreated]); c != 0 {
			return c
		}
		return compareStrings(string(a.Descriptor.Digest), string(b.Descriptor.Digest))
	})
	var firstErr error
	for _, r := range items {
		if r.Err == nil && len(r.Layers) == 1 && r.Layers[0].MediaType == SPDXMediaType {
			doc, err := ParseSPDX(r.Layers[0].Payload)
			if err == nil {
				return &Stored{SPDX: r.Layers[0].Payload, Doc: doc, Referrer: r.Descriptor}, nil
			}
			r.Err = err
		}
		if firstErr == nil && r.Err != nil {
			firstErr = fmt.Errorf("%w: the SBOM referrer %s of %s: %w", ErrBadSBOM, r.Descriptor.Digest, subject, r.Err)
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return nil, ErrNoSBOM
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
