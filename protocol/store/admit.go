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
