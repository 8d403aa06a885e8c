package store

import (
	"context"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
)

// ReadTime reads a time about a root held in repo (named repository):
// zero when it is not known; err for failing to read the registry. It
// must do bounded work.
type ReadTime func(ctx context.Context, repo oci.ReadOnlyRepository, repository string) (time.Time, error)

// Dated asks read (a fact named key, unique to it and to whom it trusts,
// such as a policy's trusted ingest time) about subject, cached by digest
// for ResolveTTL as admission verdicts are, so an attestation written
// later is seen within it. The error is a classified *Error when the
// registry fails (never cached as a time).
func (r *Repo) Dated(ctx context.Context, key string, subject digest.Digest, read ReadTime) (time.Time, error) {
	o, err := r.opened(ctx)
	if err != nil {
		return time.Time{}, r.fail(err, "reading "+key)
	}
	res, err := r.s.dated.Get(ctx, key+" "+r.name+"@"+subject.String(), func(ctx context.Context) (time.Time, int64, error) {
		select { // the referrers API probe started beside the first reads
		case <-o.probed:
		case <-ctx.Done():
			return time.Time{}, 0, ctx.Err()
		}
		t, err := read(ctx, o.repo, r.name)
		return t, 64, err
	})
	if err != nil {
		return time.Time{}, r.fail(err, "reading "+key)
	}
	return res.Val, nil
}

// ReadValue reads a bounded value about a subject held in repo (named
// repository) and what it costs to hold, in bytes; err for failing to
// read the registry.
type ReadValue func(ctx context.Context, repo oci.ReadOnlyRepository, repository string) (value any, cost int64, err error)

// Described asks read (a description named key, unique to it and to what
// it is matched against, such as the vulnerabilities a vulnerability
// database finds in a platform's SBOM) about subject, cached by digest
// for ResolveTTL as ingest times are, so an SBOM attached later is seen
// within it. The error is a classified *Error when the registry fails.
func (r *Repo) Described(ctx context.Context, key string, subject digest.Digest, read ReadValue) (any, error) {
	return r.describeIn(ctx, r.s.described, key, subject, read)
}

// Summarised is Described for the small values every catalogue search
// reads of each module it looks at (a module's root interface), in a
// cache of their own: large descriptions read one page at a time (a
// whole interface with its READMEs, an SBOM's vulnerabilities) never
// evict them, so a warm search over every module reads nothing.
func (r *Repo) Summarised(ctx context.Context, key string, subject digest.Digest, read ReadValue) (any, error) {
	return r.describeIn(ctx, r.s.summaries, key, subject, read)
}

func (r *Repo) describeIn(ctx context.Context, c *cache.Cache[any], key string, subject digest.Digest, read ReadValue) (any, error) {
	o, err := r.opened(ctx)
	if err != nil {
		return nil, r.fail(err, "reading "+key)
	}
	res, err := c.Get(ctx, key+" "+r.name+"@"+subject.String(), func(ctx context.Context) (any, int64, error) {
		select { // the referrers API probe started beside the first reads
		case <-o.probed:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
		v, cost, err := read(ctx, o.repo, r.name)
		return v, 64 + cost, err
	})
	if err != nil {
		return nil, r.fail(err, "reading "+key)
	}
	return res.Val, nil
}
