package publish_test

import (
	"context"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/publish"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// An attested push to Distribution (no referrers API: the referrers tag
// schema) writes each platform's SBOM attestation in both forms without
// asking what a platform manifest it wrote cannot have (no .att read, no
// bundle listing before its own), and sends each .att and .sig with its
// tag (no tag fetched back); a re-push of the same release writes nothing.
func TestAttestedPushRequests(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistryWithAccessLog(t)
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	ref := oci.Reference{Registry: reg.Host, Repository: "acme/hello"}
	key := &publish.KeyAttester{Signer: attesttest.Signer(t), Version: "test"}
	pushTo := func(ref oci.Reference, key *publish.KeyAttester) (oci.PushResult, *release.Provider, []string) {
		t.Helper()
		repo, err := client.Open(ref)
		if err != nil {
			t.Fatal(err)
		}
		before := len(reg.AccessLog())
		rel := seed.Hello(t)
		res, err, attestErr := publish.PushProvider(ctx, rel, publish.ProviderTarget{Target: publish.Target{Repo: repo, Ref: ref, Attest: key}})
		if err != nil || attestErr != nil {
			t.Fatalf("%v %v", err, attestErr)
		}
		return res, rel, reg.AccessLog()[before:]
	}
	push := func() (oci.PushResult, *release.Provider, []string) { return pushTo(ref, key) }
	_, _, plain := pushTo(oci.Reference{Registry: reg.Host, Repository: "acme/plain/hello"}, nil)
	res, rel, log := push()
	repo, _ := client.Open(ref)
	platforms := 0
	for _, r := range rel.SBOMs() {
		if r.Status != release.SBOMWritten || !r.Attested {
			t.Fatalf("%+v", r)
		}
		platforms++
		if ok, err := attest.AttestationComplete(ctx, repo, r.Manifest, key.Key(), sbom.SPDXPredicateType); !ok || err != nil {
			t.Errorf("%s: the SBOM's attestation is not complete in both forms: %v", r.Platform, err)
		}
		att := attach.AttachmentTag(r.Manifest, attach.CosignAttestations)
		for _, l := range log {
			if strings.HasPrefix(l, "GET ") && strings.Contains(l, "/manifests/"+att+" ") {
				t.Errorf("%s: the push read the .att of a platform manifest it wrote: %s", r.Platform, l)
			}
		}
	}
	if ok, err := attest.Complete(ctx, repo, res.Root.Digest, key.Key(), release.ProviderPredicateType); !ok || err != nil {
		t.Errorf("the root is not signed and attested in both forms: %v", err)
	}
	// Each .att and .sig: one PUT under its tag, none by digest.
	tagged := 0
	for _, l := range log {
		if strings.HasPrefix(l, "PUT ") && strings.Contains(l, "/manifests/sha256-") && (strings.Contains(l, ".att ") || strings.Contains(l, ".sig ")) {
			tagged++
		}
	}
	if want := platforms + 2; tagged != want {
		t.Errorf("%d .att/.sig writes under their tags, want %d (a platform's .att each, the root's .sig and .att)", tagged, want)
	}
	// Beyond a plain push: per platform, the bundle referrer (its blob,
	// manifest, referrers index read and write: 5) and the .att (two
	// blobs, the tag checked, written, checked after settling: 7); the
	// root's two bundles (11) and .sig and .att (16). Before the requests
	// were counted: 18 per platform and 35.
	extra := len(log) - len(plain)
	t.Logf("%d platforms: a plain push sent %d requests, an attested one %d (+%d)", platforms, len(plain), len(log), extra)
	if max := 12*platforms + 28; extra > max {
		t.Errorf("an attested push of %d platforms sent %d requests more than a plain one, more than %d:\n%s", platforms, extra, max, strings.Join(log, "\n"))
	}

	_, _, again := push()
	for _, l := range again {
		if !strings.HasPrefix(l, "GET ") && !strings.HasPrefix(l, "HEAD ") {
			t.Errorf("a re-push of the attested release wrote: %s", l)
		}
	}
}
