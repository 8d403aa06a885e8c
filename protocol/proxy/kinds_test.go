package proxy

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	pubrelease "github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/source/gate"
)

// notAttested is what clients are told of a release the keys refuse.
const notAttested = gate.NotAttested

// attestRoot attests a pushed root with s and predicate type pt, as
// `push module|tofu --attest-key` does.
func attestRoot(t *testing.T, repo oci.Repository, name string, a *oci.Artifact, s *attest.Signer, pt string) {
	t.Helper()
	if _, err := attest.Attach(context.Background(), repo, name, a.Root().Digest, s, pt, map[string]string{}); err != nil {
		t.Fatal(err)
	}
}

// With RequireAttestation, a module version without an attestation of
// the module predicate type is left out of the versions document and 404
// with the reason when asked for, by tag or by manifest digest; without
// it, both are served.
func TestRequireAttestationModules(t *testing.T) {
	dir, open := moduleStore(t)
	repo := open("acme", "network", "aws")
	s := attesttest.Signer(t)
	good := moduleArtifact(t, moduleZip(t, "1.0.0"))
	push(t, repo, good, "1.0.0")
	attestRoot(t, repo, "acme/network/aws", good, s, modulepkg.PredicateType)
	bad := moduleArtifact(t, moduleZip(t, "1.1.0"))
	push(t, repo, bad, "1.1.0")
	// An attestation of another kind's predicate type does not count.
	attestRoot(t, repo, "acme/network/aws", bad, s, pubrelease.ProviderPredicateType)

	tpl := mustModuleTemplate(t, "oci-layout:"+dir+"/${namespace}/${name}/${system}")
	plain := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{tpl}})
	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{tpl}, RequireAttestation: []*attest.Verifier{s.Public()}})

	var vs moduleVersionsDoc
	plain.getJSON(t, "/v1/modules/acme/network/aws/versions", 200, &vs)
	if got := vs.list(); len(got) != 2 {
		t.Fatalf("without the rule: %v, want both versions", got)
	}
	badURL := plain.moduleDownload(t, "/v1/modules/acme/network/aws/1.1.0/download", nil)
	if r := plain.get(t, badURL); r.Status != 200 {
		t.Fatalf("without the rule, 1.1.0's archive: %d", r.Status)
	}

	vs = moduleVersionsDoc{}
	p.getJSON(t, "/v1/modules/acme/network/aws/versions", 200, &vs)
	if got := vs.list(); !slices.Equal(got, []string{"1.0.0"}) {
		t.Fatalf("with the rule: %v, want only the attested 1.0.0", got)
	}
	if r := p.get(t, p.moduleDownload(t, "/v1/modules/acme/network/aws/1.0.0/download", nil)); r.Status != 200 {
		t.Fatalf("attested 1.0.0's archive: %d", r.Status)
	}
	p.wantError(t, "/v1/modules/acme/network/aws/1.1.0/download", http.StatusNotFound, "module acme/network/aws 1.1.0 is not served: "+notAttested)
	// The archive URL handed out without the rule is refused with it.
	p.wantError(t, p.URL+mustURL(t, badURL).RequestURI(), http.StatusNotFound, "is not served: "+notAttested)
}

// With a policy, a denied module version is left out of the versions
// document, and its download answer and archive are 404 with the reason;
// the policy matches the module by the proxy's registry hostname.
func TestPolicyModules(t *testing.T) {
	dir, open := moduleStore(t)
	repo := open("acme", "network", "aws")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		push(t, repo, moduleArtifact(t, moduleZip(t, v)), v)
	}
	tpl := mustModuleTemplate(t, "oci-layout:"+dir+"/${namespace}/${name}/${system}")
	plain := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{tpl}, RegistryHostname: "example.com"})
	badURL := plain.moduleDownload(t, "/v1/modules/acme/network/aws/1.1.0/download", nil)
	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{tpl}, RegistryHostname: "example.com", Policy: mustPolicy(t, `
module "example.com/acme/*/*" {
  name = "acme"
  deny = ["1.1.0"]
}`)})

	var vs moduleVersionsDoc
	p.getJSON(t, "/v1/modules/acme/network/aws/versions", 200, &vs)
	if got := vs.list(); !slices.Equal(got, []string{"1.0.0"}) {
		t.Fatalf("versions %v, want only 1.0.0", got)
	}
	if r := p.get(t, p.moduleDownload(t, "/v1/modules/acme/network/aws/1.0.0/download", nil)); r.Status != 200 {
		t.Fatalf("1.0.0's archive: %d", r.Status)
	}
	why := `module acme/network/aws 1.1.0 is not served: example.com/acme/network/aws 1.1.0 is denied by the policy's rule "acme"`
	p.wantError(t, "/v1/modules/acme/network/aws/1.1.0/download", http.StatusNotFound, why)
	p.wantError(t, p.URL+mustURL(t, badURL).RequestURI(), http.StatusNotFound, why)

	// Every version denied: the versions document is 404, saying so.
	none := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{tpl}, RegistryHostname: "example.com", Policy: mustPolicy(t, `default = "deny"`)})
	none.wantError(t, "/v1/modules/acme/network/aws/versions", http.StatusNotFound, "2 denied by the policy")
}

// OpenTofu releases: a policy's tofu block and RequireAttestation leave
// refused releases out of api.json, and their files are 404 with the
// reason.
func TestRulesTofuMirror(t *testing.T) {
	ref, repo := tofuLayout(t)
	s := attesttest.Signer(t)
	for _, v := range []string{"1.8.0", "1.9.0"} {
		rel := pushTofuFixture(t, repo, v)
		if v == "1.9.0" {
			a, err := rel.Artifact()
			if err != nil {
				t.Fatal(err)
			}
			attestRoot(t, repo, "opentofu", a, s, pubrelease.TofuPredicateType)
		}
	}
	ids := func(p *proxy) []string {
		var doc tofuAPIDoc
		p.getJSON(t, "/tofu/api.json", 200, &doc)
		var out []string
		for _, v := range doc.Versions {
			out = append(out, v.ID)
		}
		return out
	}
	sums := func(v string) string { return "/tofu/download/v" + v + "/tofu_" + v + "_SHA256SUMS" }

	plain := startProxy(t, Options{TofuRepository: &ref})
	if got := ids(plain); !slices.Equal(got, []string{"1.9.0", "1.8.0"}) {
		t.Fatalf("without rules: %v", got)
	}

	pol := startProxy(t, Options{TofuRepository: &ref, Policy: mustPolicy(t, `tofu { versions = "< 1.9.0" }`)})
	if got := ids(pol); !slices.Equal(got, []string{"1.8.0"}) {
		t.Fatalf("with the policy: %v, want 1.8.0", got)
	}
	if r := pol.get(t, sums("1.8.0")); r.Status != 200 {
		t.Fatalf("allowed 1.8.0: %d", r.Status)
	}
	pol.wantError(t, sums("1.9.0"), http.StatusNotFound, `OpenTofu 1.9.0 is not served: tofu 1.9.0 does not meet versions = "< 1.9.0"`)

	att := startProxy(t, Options{TofuRepository: &ref, RequireAttestation: []*attest.Verifier{s.Public()}})
	if got := ids(att); !slices.Equal(got, []string{"1.9.0"}) {
		t.Fatalf("with RequireAttestation: %v, want the attested 1.9.0", got)
	}
	if r := att.get(t, sums("1.9.0")); r.Status != 200 {
		t.Fatalf("attested 1.9.0: %d", r.Status)
	}
	att.wantError(t, sums("1.8.0"), http.StatusNotFound, "OpenTofu 1.8.0 is not served: "+notAttested)
}
