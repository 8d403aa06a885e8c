package catalog

import (
	"context"
	"slices"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// What a provider version's page lists of the attestations, signatures
// and other artifacts stored for its index: its OCI referrers (of every
// artifact type) and the layers of its cosign tag-schema attachments
// (.att, .sig), bounded, read once per index digest.

// MaxReferrersShown bounds the stored artifacts a version's page lists.
const MaxReferrersShown = 64

// Via says how a stored artifact refers to the index.
const (
	ViaReferrer = "referrer"
	ViaCosignAt = "cosign .att tag"
	ViaCosignSg = "cosign .sig tag"
)

// StoredArtifacts are the artifacts stored for a version's index: the
// first MaxReferrersShown (Listed), how many there are (Total; at least
// that many when More: the registry's listing runs beyond what is read)
// and how many are not listed (Rest). Note says why they could not be
// listed, when that is the registry's fault.
type StoredArtifacts struct {
	Listed []StoredArtifact `json:"listed"`
	Total  int              `json:"total"`
	Rest   int              `json:"rest"`
	More   bool             `json:"more,omitempty"`
	Note   string           `json:"note,omitempty"`
}

// StoredArtifact is one artifact stored for an index: how it refers to
// it (Via), its artifact type (a tag-schema layer's media type), the
// predicate type it names (an attestation's), its digest (a referrer's
// manifest, a tag-schema layer) and size. Verified is false for those
// of the predicate type the attestation rule requires when it refuses
// the release (none of them verified); it is never true: the rule's
// verdict is on the release, and anyone who may push can store an
// artifact claiming that predicate type beside the one that verified
// (the page's attestation says whether one did).
type StoredArtifact struct {
	Via           string `json:"via"`
	ArtifactType  string `json:"artifact_type"`
	PredicateType string `json:"predicate_type,omitempty"`
	Digest        string `json:"digest"`
	Size          int64  `json:"size"`
	Verified      *bool  `json:"verified,omitempty"`
}

// storedArtifacts lists the artifacts stored for the index at root,
// cached by its digest (store.Repo.Described: one stored later is seen
// within its TTL); a registry failing to list them is said on the page.
func storedArtifacts(ctx context.Context, root source.Root) StoredArtifacts {
	v, err := root.Repo.Described(ctx, "the release's stored artifacts", root.Digest, func(ctx context.Context, repo oci.ReadOnlyRepository, _ string) (any, int64, error) {
		a, err := listArtifacts(ctx, repo, root)
		return a, int64(len(a.Listed) * 256), err
	})
	if err != nil {
		return StoredArtifacts{Listed: []StoredArtifact{}, Note: "the stored artifacts could not be listed: " + err.Error()}
	}
	a, _ := v.(StoredArtifacts)
	return a
}

// listArtifacts reads the referrers of root's index and its cosign
// attachments' layers, the first MaxReferrersShown of them kept.
func listArtifacts(ctx context.Context, repo oci.ReadOnlyRepository, root source.Root) (StoredArtifacts, error) {
	l, err := attach.ListReferrers(ctx, repo, root.Digest, MaxReferrersShown)
	if err != nil {
		return StoredArtifacts{}, err
	}
	out := StoredArtifacts{Listed: []StoredArtifact{}, Total: l.Total, More: l.More}
	for _, d := range l.First {
		out.Listed = append(out.Listed, artifactOf(ViaReferrer, d, d.ArtifactType, d.Annotations[attest.AnnotationBundlePredicateType]))
	}
	for _, t := range []struct {
		kind attach.AttachmentKind
		via  string
	}{{attach.CosignAttestations, ViaCosignAt}, {attach.CosignSignatures, ViaCosignSg}} {
		kind, via := t.kind, t.via
		layers, n, err := attach.ListAttachment(ctx, repo, root.Digest, kind)
		if err != nil {
			return StoredArtifacts{}, err
		}
		for _, d := range layers {
			if len(out.Listed) < MaxReferrersShown {
				out.Listed = append(out.Listed, artifactOf(via, d, d.MediaType, d.Annotations[attach.AnnotationPredicateType]))
			}
		}
		out.Total += n // every layer, those past the ones read too
	}
	out.Rest = out.Total - len(out.Listed)
	return out, nil
}

// artifactOf is d listed as via, of artifactType and predicateType.
func artifactOf(via string, d ocispec.Descriptor, artifactType, predicateType string) StoredArtifact {
	return StoredArtifact{Via: via, ArtifactType: clipText(artifactType), PredicateType: clipText(predicateType), Digest: clipText(d.Digest.String()), Size: d.Size}
}

// verdictsOn marks the artifacts of the predicate type a requires as
// not verified when a refuses the release (nil a: serve has no
// attestation rule), in a copy of Listed (s is the cache's). An
// admitted release marks none: which of them verified is not known.
func (s *StoredArtifacts) verdictsOn(a *Admission) {
	if a == nil || a.Admitted {
		return
	}
	s.Listed = slices.Clone(s.Listed)
	for i := range s.Listed {
		if s.Listed[i].PredicateType == a.PredicateType {
			s.Listed[i].Verified = new(bool)
		}
	}
}
