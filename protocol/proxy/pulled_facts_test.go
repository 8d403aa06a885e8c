package proxy

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// signerAttester attests what pull-through stores with s, as serve
// --attest-key does.
type signerAttester struct{ s *attest.Signer }

func (a signerAttester) Attest(ctx context.Context, repo oci.Repository, repository string, root digest.Digest, predicateType string, pred any) error {
	_, err := attest.Attach(ctx, repo, repository, root, a.s, predicateType, pred)
	return err
}

func (a signerAttester) AttestOnly(ctx context.Context, repo oci.Repository, repository string, subject ocispec.Descriptor, fresh bool, predicateType string, pred any) (func(context.Context) error, error) {
	_, err := attest.AttachAttestationTo(ctx, repo, repository, subject, fresh, a.s, predicateType, pred)
	return nil, err
}

func (a signerAttester) Key() *attest.Verifier { return a.s.Public() }

// A min_age rule with pull-through: the origin's versions are never handed
// out from the origin; listing the provider pulls them in the background
// (pull-through's first sight, attested with the proxy's key at that
// time), they are listed once they are min_age old by the proxy's clock
// (no restart), and then served from the registry.
func TestPullThroughMinAge(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{
		{Namespace: "acme", Type: "widgets", Dir: signedRelease(t, "widgets", "1.0.0", 64, "linux_amd64"), Key: key},
	})
	t0 := time.Now()
	clk := newClock(t0)
	s := attesttest.Signer(t)
	base, _ := url.Parse(origin.ProvidersURL())
	pt := pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, RegistryOrigin: "example.com", Client: originClient(t),
		Attest: &ingest.Attestation{Attester: signerAttester{s}, Version: "test", Now: clk.now}}
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+t.TempDir()+"/${hostname}/${namespace}/${type}"), PullThrough: &pt,
		Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}, RegistryHostname: "example.com", Now: clk.now,
		Policy: mustPolicy(t, `provider "*/*/*" {
  name    = "cool-down"
  min_age = "72h"
}`)})
	index := "/v1/mirror/example.com/acme/widgets/index.json"
	if r := p.get(t, index); r.Status == 200 && strings.Contains(string(r.Body), "1.0.0") {
		t.Fatalf("a version min_age has not seen age was listed: %s", r.Body)
	}
	p.wantError(t, "/v1/mirror/example.com/acme/widgets/1.0.0.json", 404, `the policy's rule "cool-down" serves it once it is stored`)
	waitIdle(t, p)
	zips := func() int { return origin.Count(func(p string) bool { return strings.HasSuffix(p, ".zip") }) }
	for deadline := time.Now().Add(10 * time.Second); zips() == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("listing the provider did not pull the release")
		}
	}
	waitIdle(t, p)
	p.wantError(t, "/v1/mirror/example.com/acme/widgets/1.0.0.json", 404, "cool-down")
	clk.add(73 * time.Hour)
	var idx struct{ Versions map[string]any }
	p.getJSON(t, index, 200, &idx)
	if _, ok := idx.Versions["1.0.0"]; !ok {
		t.Fatalf("index.json once 1.0.0 aged in: %v", idx.Versions)
	}
	var mv networkMirrorVersion
	r := p.getJSON(t, "/v1/mirror/example.com/acme/widgets/1.0.0.json", 200, &mv)
	if u := mv.Archives["linux_amd64"].URL; !strings.Contains(resolve(t, r.URL, u), ArchivePrefix) {
		t.Errorf("the aged-in release is served from %s, not from the registry", u)
	}
	if n := zips(); n != 1 {
		t.Errorf("the origin's zip was fetched %d times, want once", n)
	}
}
