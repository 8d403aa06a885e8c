package store_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

func TestAdmittedCachesVerdictsByDigest(t *testing.T) {
	ctx := context.Background()
	l := newLayout(t)
	good, bad, broken := digest.FromString("good"), digest.FromString("bad"), digest.FromString("broken")
	var calls atomic.Int32
	admit := func(ctx context.Context, repo oci.ReadOnlyRepository, _, kind string, subject digest.Digest) (error, error) {
		calls.Add(1)
		switch {
		case kind != store.KindProvider:
			return nil, errors.New("asked about " + kind)
		case subject == bad:
			return errors.New(strings.Repeat("x", 10_000)), nil
		case subject == broken:
			return nil, context.DeadlineExceeded
		}
		return nil, nil
	}
	repo := newStore(t, store.Options{Admit: admit}).Repo(l.ref)
	for range 2 {
		if err := repo.Admitted(ctx, store.KindProvider, good); err != nil {
			t.Fatalf("admitted: %v", err)
		}
		err := repo.Admitted(ctx, store.KindProvider, bad)
		r, ok := store.Refused(err)
		if !ok || r.Subject != bad || len(r.Reason) > 600 {
			t.Fatalf("refused: %v", err)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the policy was asked %d times for two subjects asked twice each, want 2 (verdicts cached)", n)
	}
	err := repo.Admitted(ctx, store.KindProvider, broken)
	if _, ok := store.Refused(err); ok || failure(t, err) != oci.FailureTimeout {
		t.Errorf("a failing registry: %v (%v), want a timeout, not a refusal", err, failure(t, err))
	}

	unpoliced := newStore(t, store.Options{}).Repo(l.ref)
	if err := unpoliced.Admitted(ctx, store.KindProvider, bad); err != nil {
		t.Errorf("without a policy: %v", err)
	}
}
