package prune

import (
	"context"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// tree is everything one tagged manifest brings with it: the manifests
// an index lists, every attachment (referrers, as the referrers API or
// its sha256-<hex> tag schema lists them, and the cosign tags
// sha256-<hex>.sig, .att, .sbom…) of each of them, recursively, and the
// blobs all of those hold.
type tree struct {
	root         ocispec.Descriptor
	artifactType string
	// order is the manifests in an order they can be deleted in without a
	// tag ever naming a missing manifest: a manifest's attachments before
	// it, an index before the manifests it lists (and their attachments
	// before the index).
	order []ocispec.Descriptor
	// sizes are the size of every manifest and blob of the tree.
	sizes map[digest.Digest]int64
	// created is the latest creation time a referrer of the root
	// records (pushed, below); zero when none does.
	created time.Time
}

// pushed notes when a Sigstore bundle attached to the root says it was
// created: the bundles push --attest-key and pull-through write carry
// org.opencontainers.image.created, the time they were made. Other
// referrers' times are not push times (an SBOM's may be its build's
// source date, years back) and are ignored: a version they alone date
// stays of unknown push time, kept (Rules.KeepDownloadedWithin). Not
// verified: whoever may attach a bundle may also delete the version.
func (t *tree) pushed(r ocispec.Descriptor) {
	if !strings.HasPrefix(r.ArtifactType, sigstoreBundlePrefix) {
		return
	}
	c, err := time.Parse(time.RFC3339, r.Annotations[ocispec.AnnotationCreated])
	if err == nil && c.After(t.created) {
		t.created = c
	}
}

// sigstoreBundlePrefix begins the artifact type of Sigstore bundles
// (attach.ArtifactTypeSigstoreBundle and its older versions).
const sigstoreBundlePrefix = "application/vnd.dev.sigstore.bundle"

// walker reads trees in one repository.
type walker struct {
	repo oci.ReadOnlyRepository
	// attached maps "sha256-<hex>" to the tags of the manifests attached
	// to that digest by name: the referrers tag schema index itself and
	// cosign's .sig/.att/.sbom tags.
	attached map[string][]string
}

// attachmentKey is the tag prefix attachments of d carry.
func attachmentKey(d digest.Digest) string {
	return d.Algorithm().String() + "-" + d.Encoded()
}

// attachmentSubject is the attachmentKey an attachment tag names, if the
// tag is one: sha256-<hex>, or sha256-<hex>.<suffix>.
func attachmentSubject(tag string) (string, bool) {
	key, _, _ := strings.Cut(tag, ".")
	alg, hex, ok := strings.Cut(key, "-")
	if !ok || digest.Algorithm(alg).Validate(hex) != nil {
		return "", false
	}
	return key, true
}

// walk reads the tree of root. A manifest already gone (an interrupted
// prune deleted it) is left out, with what only it referred to.
func (w *walker) walk(ctx context.Context, root ocispec.Descriptor) (*tree, error) {
	v := &visit{walker: w, t: &tree{root: root, sizes: map[digest.Digest]int64{}}, seen: map[digest.Digest]bool{}, attachmentsSeen: map[digest.Digest]bool{}}
	if err := v.manifest(ctx, root, true); err != nil {
		return nil, err
	}
	return v.t, nil
}

// visit is one walk's state.
type visit struct {
	*walker
	t               *tree
	seen            map[digest.Digest]bool
	attachmentsSeen map[digest.Digest]bool
}

func (v *visit) manifest(ctx context.Context, d ocispec.Descriptor, root bool) error {
	if v.seen[d.Digest] {
		return nil
	}
	v.seen[d.Digest] = true
	if err := v.attachments(ctx, d.Digest); err != nil {
		return err
	}
	links, err := attach.ReadLinks(ctx, v.repo, d)
	if oci.IsNotFound(err) && !root {
		return nil
	}
	if err != nil {
		return err
	}
	if root {
		v.t.artifactType = links.ArtifactType
	}
	v.t.sizes[d.Digest] = d.Size
	for _, b := range links.Blobs {
		v.t.sizes[b.Digest] = b.Size
	}
	for _, c := range links.Manifests {
		if err := v.attachments(ctx, c.Digest); err != nil {
			return err
		}
	}
	v.t.order = append(v.t.order, d)
	for _, c := range links.Manifests {
		if err := v.manifest(ctx, c, false); err != nil {
			return err
		}
	}
	return nil
}

// attachments visits what is attached to d: its referrers first, then
// the tags named after it, so that the referrers tag schema index comes
// after the referrers it lists.
func (v *visit) attachments(ctx context.Context, d digest.Digest) error {
	if v.attachmentsSeen[d] {
		return nil
	}
	v.attachmentsSeen[d] = true
	referrers, err := attach.ListAllReferrers(ctx, v.repo, d)
	if err != nil {
		return err
	}
	for _, r := range referrers {
		if d == v.t.root.Digest {
			v.t.pushed(r)
		}
		if err := v.manifest(ctx, r, false); err != nil {
			return err
		}
	}
	for _, tag := range v.attached[attachmentKey(d)] {
		desc, err := v.repo.Resolve(ctx, tag)
		if oci.IsNotFound(err) {
			continue // deleted since the tags were listed
		}
		if err != nil {
			return err
		}
		if err := v.manifest(ctx, desc, false); err != nil {
			return err
		}
	}
	return nil
}
