package ingest_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/publish"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
)

// taggedAttester is a key's attester that records, for each root it
// attests, whether the version tag named it already.
type taggedAttester struct {
	publish.KeyAttester
	mu     sync.Mutex
	tagged []bool
}

func (a *taggedAttester) Attest(ctx context.Context, repo oci.Repository, repository string, root digest.Digest, predicateType string, predicate any) error {
	d, err := repo.Resolve(ctx, "1.0.0")
	a.mu.Lock()
	a.tagged = append(a.tagged, err == nil && d.Digest == root)
	a.mu.Unlock()
	return a.KeyAttester.Attest(ctx, repo, repository, root, predicateType, predicate)
}

func (a *taggedAttester) calls() []bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]bool(nil), a.tagged...)
}

// Mirror and pull-through attest a release (publish.Push) wholly before
// its tags are written and before the push's own BeforeTag; a release
// found up to date is attested after the push.
func TestPushDirAttestedAttestsBeforeTags(t *testing.T) {
	ctx := context.Background()
	o := testenv.StartOrigin(t, []testenv.OriginRelease{
		{Namespace: "good", Type: "hello", Dir: testenv.Testdata(t, "providers", "hello", "1.0.0"), Key: testenv.Testdata(t, "keys", "gpg-signer.asc")},
	})
	c := originClient(t)
	rel, err := resolve(t, c, o, "good", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := rel.WriteChecksums(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range rel.Platforms {
		if err := rel.DownloadZip(ctx, c, p, dir, 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	client, _ := oci.NewClient(oci.Options{})
	repo, err := client.Open(oci.Reference{Layout: true, Repository: filepath.Join(t.TempDir(), "layout")})
	if err != nil {
		t.Fatal(err)
	}
	a := &taggedAttester{KeyAttester: publish.KeyAttester{Signer: attesttest.Signer(t)}}
	att := &ingest.Attestation{Attester: a, Version: "test"}
	var attestedFirst bool
	opts := oci.PushOptions{BeforeTag: func(context.Context, ocispec.Descriptor) error {
		attestedFirst = len(a.calls()) == 1
		return nil
	}}
	res, err := rel.PushDirAttested(ctx, dir, repo, "registry.example.com/good/hello", opts, att)
	if err != nil || res.UpToDate {
		t.Fatalf("%+v %v", res, err)
	}
	if got := a.calls(); len(got) != 1 || got[0] || !attestedFirst {
		t.Fatalf("attested %v (tagged already at each), before the push's BeforeTag: %v", got, attestedFirst)
	}
	if ok := att.Attested(ctx, repo, res.Root.Digest, release.ProviderPredicateType); !ok {
		t.Error("the release is not attested in both forms")
	}
	again, err := rel.PushDirAttested(ctx, dir, repo, "registry.example.com/good/hello", oci.PushOptions{}, att)
	if err != nil || !again.UpToDate {
		t.Fatalf("%+v %v", again, err)
	}
	if got := a.calls(); len(got) != 2 || !got[1] {
		t.Errorf("an up-to-date release: attested %v (tagged already at each), want once more, after", got)
	}
}
