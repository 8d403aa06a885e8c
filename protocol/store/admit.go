package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Admit is an admission rule (Options.Admit): it says whether the root
// subject (a provider index, …) of a kind (names.KindProvider) held in
// repo, named repository (oci.Reference.Name: host/path,
// oci-layout:PATH), may be served. refusal is nil when it may and says
// why not otherwise (content the rule cannot accept, however hostile, is
// a refusal); err is for failing to read the registry. It must do
// bounded work.
type Admit func(ctx context.Context, repo oci.ReadOnlyRepository, repository string, kind names.Kind, subject digest.Digest) (refusal, err error)

// Refusal is what Admitted returns for a root the admission rule refuses.
type Refusal struct {
	Repo    string
	Kind    names.Kind
	Subject digest.Digest
	Reason  string
}

func (e *Refusal) Error() string {
	return fmt.Sprintf("%s: the %s %s is not admitted: %s", e.Repo, e.Kind.Noun(), e.Subject, e.Reason)
}

// Refused reports whether err is the admission rule's refusal, and
// returns it.
func Refused(err error) (*Refusal, bool) {
	var r *Refusal
	ok := errors.As(err, &r)
	return r, ok
}

// maxReason bounds the refusal reason kept (and shown to clients): it can
// quote what a hostile attachment holds.
const maxReason = 512

// admission is a verdict (Admit's, or a Check's), cached.
type admission struct {
	refused bool
	reason  string
}

// Admitted asks Options.Admit whether the root subject of a kind may be
// served: nil when it may, or when there is no rule (then nothing is
// read); a *Refusal when not; a classified *Error when the registry fails.
// Verdicts are cached by digest for ResolveTTL (revalidated in the
// background within MaxStale), so an attestation written or withdrawn
// later is seen within it; failures for FailureTTL.
func (r *Repo) Admitted(ctx context.Context, kind names.Kind, subject digest.Digest) error {
	admit := r.s.opts.Admit
	if admit == nil {
		return nil
	}
	v, err := r.verdict(ctx, kind.Noun()+" "+r.name+"@"+subject.String(), func(ctx context.Context, repo oci.ReadOnlyRepository) (error, error) {
		return admit(ctx, repo, r.name, kind, subject)
	})
	if err != nil {
		return r.fail(err, "reading the "+kind.Noun()+"'s attestation")
	}
	if v.refused {
		return &Refusal{Repo: r.name, Kind: kind, Subject: subject, Reason: v.reason}
	}
	return nil
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
func (r *Repo) verdict(ctx context.Context, key string, ask func(context.Context, oci.ReadOnlyRepository) (refusal, err error)) (admission, error) {
	o, err := r.opened(ctx)
	if err != nil {
		return admission{}, err
	}
	res, err := r.s.admissions.Get(ctx, key, func(ctx context.Context) (admission, int64, error) {
		select { // the referrers API probe started beside the first reads
		case <-o.probed:
		case <-ctx.Done():
			return admission{}, 0, ctx.Err()
		}
		refusal, err := ask(ctx, o.repo)
		if err != nil || refusal == nil {
			return admission{}, 64, err
		}
		reason := refusal.Error()
		if len(reason) > maxReason {
			reason = reason[:maxReason] + "…"
		}
		return admission{refused: true, reason: reason}, 64 + int64(len(reason)), nil
	})
	if err != nil {
		return admission{}, err
	}
	return res.Val, nil
}
