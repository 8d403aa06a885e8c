package store

import (
	"context"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
)

// maxReason bounds the refusal reason kept (and shown to clients): it can
// quote what a hostile attachment holds.
const maxReason = 512

// rootVerdict is what a rule said of a root (Admit's, or a Check's),
// cached.
type rootVerdict struct {
	refused bool
	reason  string
}

// Check is one requirement on a root, asked by Checked: refusal nil when
// the root held in repo (named repository) meets it; err for failing to
// read the registry. It must do bounded work.
type Check func(ctx context.Context, repo oci.ReadOnlyRepository, repository string) (refusal, err error)

// Checked asks check (a requirement named key, unique to it, such as a
// policy signer's) about subject, as Admitted asks Options.Admit and
// cached alike: passed, or the refusal's reason (bounded); err is a
// classified *Error when the registry fails.
func (r *Repo) Checked(ctx context.Context, key string, subject digest.Digest, check Check) (passed bool, reason string, err error) {
	v, err := r.verdict(ctx, "check "+key+" "+r.name+"@"+subject.String(), func(ctx context.Context, repo oci.ReadOnlyRepository) (error, error) {
		return check(ctx, repo, r.name)
	})
	if err != nil {
		return false, "", r.fail(err, "checking "+key)
	}
	return !v.refused, v.reason, nil
}

// verdict is ask's verdict under key, cached.
func (r *Repo) verdict(ctx context.Context, key string, ask func(context.Context, oci.ReadOnlyRepository) (refusal, err error)) (rootVerdict, error) {
	o, err := r.opened(ctx)
	if err != nil {
		return rootVerdict{}, err
	}
	res, err := r.s.verdicts.Get(ctx, key, func(ctx context.Context) (rootVerdict, int64, error) {
		select { // the referrers API probe started beside the first reads
		case <-o.probed:
		case <-ctx.Done():
			return rootVerdict{}, 0, ctx.Err()
		}
		refusal, err := ask(ctx, o.repo)
		if err != nil || refusal == nil {
			return rootVerdict{}, 64, err
		}
		reason := refusal.Error()
		if len(reason) > maxReason {
			reason = reason[:maxReason] + "…"
		}
		return rootVerdict{refused: true, reason: reason}, 64 + int64(len(reason)), nil
	})
	if err != nil {
		return rootVerdict{}, err
	}
	return res.Val, nil
}
