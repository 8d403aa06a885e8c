package store

import (
	"context"
	"fmt"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Attachment is a cosign attachment of a root as the registry holds it:
// its layers (none when it has no such attachment), or why it cannot be
// read intact (Problem: too many layers, a layer too large, corrupt), which
// is for the caller a release without valid signatures, not a failure.
type Attachment struct {
	Layers  []oci.AttachmentLayer
	Problem string
}

// Attachment reads subject's attachment of a kind (signatures or
// attestations; bounded reads: oci.ReadAttachment), cached by digest for
// ResolveTTL as admission verdicts are, so one written later is seen
// within it. The error is a classified *Error when the registry fails.
func (r *Repo) Attachment(ctx context.Context, subject digest.Digest, kind oci.AttachmentKind) (Attachment, error) {
	repo, err := r.open(ctx)
	if err != nil {
		return Attachment{}, err
	}
	res, err := r.s.attachments.Get(ctx, string(kind)+" "+r.name+"@"+subject.String(), func(ctx context.Context) (Attachment, int64, error) {
		layers, err := oci.ReadAttachment(ctx, repo, subject, kind)
		switch {
		case err == nil:
			cost := int64(64)
			for _, l := range layers {
				cost += 128 + int64(len(l.Payload)) + int64(len(l.MediaType)) + 64*int64(len(l.Annotations))
			}
			return Attachment{Layers: layers}, cost, nil
		case oci.IsContentProblem(err):
			return Attachment{Problem: fmt.Sprintf("%s cannot be read intact (%s)", oci.AttachmentTag(subject, kind), oci.Classify(err))}, 128, nil
		}
		return Attachment{}, 0, err
	})
	if err != nil {
		return Attachment{}, r.fail(err, "reading the "+string(kind)+" attachment")
	}
	return res.Val, nil
}
