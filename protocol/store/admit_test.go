package store_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

func TestAdmittedCachesVerdictsByDigest(t *testing.T) {
	ctx := context.Background()
	l := newLayout(t)
	good, bad, broken := digest.FromString("good"), digest.FromString("bad"), digest.FromString("broken")
	var calls atomic.Int32
	admit := func(ctx context.Context, repo oci.ReadOnlyRepository, _ string, kind names.Kind, subject digest.Digest) (error, error) {
		calls.Add(1)
		switch {
		case kind != names.KindProvider:
			return nil, errors.New("asked about " + string(kind))
		case subject == bad:
			return errors.New(strings.Repeat("x", 10_000)), nil
		case subject == broken:
			return nil, context.DeadlineExceeded
		}
		return nil, nil
	}
	repo := newStore(t, store.Options{Admit: admit}).Repo(l.ref)
	for range 2 {
		if err := repo.Admitted(ctx, names.KindProvider, good); err != nil {
			t.Fatalf("admitted: %v", err)
		}
		err := repo.Admitted(ctx, names.KindProvider, bad)
		r, ok := store.Refused(err)
		if !ok || r.Subject != bad || len(r.Reason) > 600 {
			t.Fatalf("refused: %v", err)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the policy was asked %d times for two subjects asked twice each, want 2 (verdicts cached)", n)
	}
	err := repo.Admitted(ctx, names.KindProvider, broken)
	if _, ok := store.Refused(err); ok || failure(t, err) != oci.FailureTimeout {
		t.Errorf("a failing registry: %v (%v), want a timeout, not a refusal", err, failure(t, err))
	}

	unpoliced := newStore(t, store.Options{}).Repo(l.ref)
	if err := unpoliced.Admitted(ctx, names.KindProvider, bad); err != nil {
		t.Errorf("without a policy: %v", err)
	}
}

// Checked caches a check's verdict per key and digest, as Admitted does,
// without a policy; a refusal with an empty text is still a
// refusal, and a failing registry is an error, not a verdict.
func TestCheckedCachesVerdictsByKeyAndDigest(t *testing.T) {
	ctx := context.Background()
	l := newLayout(t)
	good, bad, broken := digest.FromString("good"), digest.FromString("bad"), digest.FromString("broken")
	var calls atomic.Int32
	check := func(subject digest.Digest) store.Check {
		return func(ctx context.Context, repo oci.ReadOnlyRepository, repository string) (error, error) {
			calls.Add(1)
			switch subject {
			case bad:
				return errors.New(""), nil
			case broken:
				return nil, context.DeadlineExceeded
			}
			return nil, nil
		}
	}
	repo := newStore(t, store.Options{}).Repo(l.ref) // the default cache budget, no policy
	for range 2 {
		if ok, why, err := repo.Checked(ctx, "signer a", good, check(good)); !ok || why != "" || err != nil {
			t.Fatalf("good: %v %q %v", ok, why, err)
		}
		if ok, _, err := repo.Checked(ctx, "signer a", bad, check(bad)); ok || err != nil {
			t.Fatalf("bad (an empty refusal): passed %v, %v", ok, err)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the check was run %d times for two subjects asked twice each, want 2", n)
	}
	if ok, _, _ := repo.Checked(ctx, "signer b", bad, check(good)); !ok {
		t.Error("another key's verdict was taken from the cache")
	}
	if ok, _, err := repo.Checked(ctx, "signer a", broken, check(broken)); ok || failure(t, err) != oci.FailureTimeout {
		t.Errorf("a failing registry: %v %v, want a timeout", ok, err)
	}
}
