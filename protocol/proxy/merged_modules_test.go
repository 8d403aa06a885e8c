package proxy

import (
	"bytes"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// twoModuleStores are two module mappings: the first holds
// acme/network/aws 1.0.0 and 1.1.0, the second another 1.0.0 (other
// bytes), 1.2.0, and acme/only/aws 2.0.0, which the first does not hold
// at all.
func twoModuleStores(t *testing.T) (first, second *repotemplate.Template, openA, openB func(ns, name, system string) oci.Repository) {
	t.Helper()
	dirA, openA := moduleStore(t)
	dirB, openB := moduleStore(t)
	push(t, openA("acme", "network", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), "1.0.0")
	push(t, openA("acme", "network", "aws"), moduleArtifact(t, moduleZip(t, "1.1.0")), "1.1.0")
	push(t, openB("acme", "network", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0 of the second mapping")), "1.0.0")
	push(t, openB("acme", "network", "aws"), moduleArtifact(t, moduleZip(t, "1.2.0")), "1.2.0")
	push(t, openB("acme", "only", "aws"), moduleArtifact(t, moduleZip(t, "2.0.0")), "2.0.0")
	return mustModuleTemplate(t, "oci-layout:"+dirA+"/${namespace}/${name}/${system}"),
		mustModuleTemplate(t, "oci-layout:"+dirB+"/${namespace}/${name}/${system}"), openA, openB
}

// (p *proxy) moduleVersions lists a module's versions, sorted.
func (p *proxy) moduleVersions(t *testing.T, module string) []string {
	t.Helper()
	var vs moduleVersionsDoc
	p.getJSON(t, "/v1/modules/"+module+"/versions", 200, &vs)
	got := vs.list()
	slices.Sort(got)
	return got
}

// (p *proxy) moduleArchive is what a version's download answer leads to.
func (p *proxy) moduleArchive(t *testing.T, module, version string) []byte {
	t.Helper()
	r := p.get(t, p.moduleDownload(t, "/v1/modules/"+module+"/"+version+"/download", nil))
	if r.Err != nil || r.Status != 200 {
		t.Fatalf("%s %s archive: %d %v", module, version, r.Status, r.Err)
	}
	return r.Body
}

// Two module mappings are merged as provider mappings are: every
// version of both; each version from the first mapping holding it (the
// conflicting 1.0.0 is the first's, and the shadowed copy is logged); a
// module the first mapping has no repository for comes from the second.
func TestMergedModuleMappings(t *testing.T) {
	first, second, _, _ := twoModuleStores(t)
	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{first, second}})

	if got := p.moduleVersions(t, "acme/network/aws"); !slices.Equal(got, []string{"1.0.0", "1.1.0", "1.2.0"}) {
		t.Fatalf("versions %v, want both mappings' 1.0.0, 1.1.0 and 1.2.0", got)
	}
	for v, want := range map[string]string{"1.0.0": "1.0.0", "1.1.0": "1.1.0", "1.2.0": "1.2.0"} {
		if got := p.moduleArchive(t, "acme/network/aws", v); !bytes.Equal(got, moduleZip(t, want)) {
			t.Errorf("%s: not the package of the first mapping holding it", v)
		}
	}
	logs := p.logs.String()
	if !strings.Contains(logs, "module version shadowed") || !strings.Contains(logs, "version=1.0.0") || strings.Contains(logs, "version=1.1.0") {
		t.Errorf("the shadowed 1.0.0 (alone) was not logged:\n%s", logs)
	}
	if got := p.moduleVersions(t, "acme/only/aws"); !slices.Equal(got, []string{"2.0.0"}) {
		t.Errorf("a module only the second mapping holds: %v", got)
	}
	if got := p.moduleArchive(t, "acme/only/aws", "2.0.0"); !bytes.Equal(got, moduleZip(t, "2.0.0")) {
		t.Error("acme/only/aws 2.0.0: not the second mapping's package")
	}
	p.wantError(t, "/v1/modules/acme/network/aws/3.0.0/download", http.StatusNotFound, "no version 3.0.0")
	p.wantError(t, "/v1/modules/acme/nothing/aws/versions", http.StatusNotFound, "unknown module acme/nothing/aws")

	// The order decides: the second mapping first serves its own 1.0.0.
	swapped := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{second, first}})
	if got := swapped.moduleArchive(t, "acme/network/aws", "1.0.0"); !bytes.Equal(got, moduleZip(t, "1.0.0 of the second mapping")) {
		t.Error("swapped: 1.0.0 is not the (now first) second mapping's")
	}
	// One mapping, as before: the first mapping's versions alone.
	alone := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{first}})
	if got := alone.moduleVersions(t, "acme/network/aws"); !slices.Equal(got, []string{"1.0.0", "1.1.0"}) {
		t.Errorf("one mapping: %v", got)
	}
}

// A registry failure of a mapping is the answer, never the other
// mapping's copy or a list without that mapping's versions: otherwise an
// outage would change what a client resolves.
func TestMergedModuleMappingsFailures(t *testing.T) {
	reg := testenv.StartRegistry(t)
	push(t, registryRepo(t, reg, "modules/acme/network/aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), "1.0.0")
	fp := newFaultProxy(t, reg)
	dir, open := moduleStore(t)
	push(t, open("acme", "network", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0 of the layout")), "1.0.0")
	push(t, open("acme", "network", "aws"), moduleArtifact(t, moduleZip(t, "1.1.0")), "1.1.0")
	faulty := mustModuleTemplate(t, fp.host()+"/modules/${namespace}/${name}/${system}")
	layout := mustModuleTemplate(t, "oci-layout:"+dir+"/${namespace}/${name}/${system}")

	opts := throughFaults()
	opts.ModuleMappings = []*repotemplate.Template{faulty, layout}
	p := startProxy(t, opts)
	opts.ModuleMappings = []*repotemplate.Template{layout, faulty}
	faultySecond := startProxy(t, opts)
	if got := p.moduleVersions(t, "acme/network/aws"); !slices.Equal(got, []string{"1.0.0", "1.1.0"}) {
		t.Fatalf("versions %v", got)
	}
	if got := p.moduleArchive(t, "acme/network/aws", "1.0.0"); !bytes.Equal(got, moduleZip(t, "1.0.0")) {
		t.Fatal("1.0.0 is not the first mapping's (the registry's)")
	}
	for _, c := range upstreamFaults {
		fp.mode.Store(c.mode)
		p.wantError(t, "/v1/modules/acme/network/aws/versions", c.status, c.msg)
		p.wantError(t, "/v1/modules/acme/network/aws/1.0.0/download", c.status, c.msg)
		faultySecond.wantError(t, "/v1/modules/acme/network/aws/versions", c.status, c.msg)
		// The first mapping serves 1.1.0 whatever the second's state.
		if got := faultySecond.moduleArchive(t, "acme/network/aws", "1.1.0"); !bytes.Equal(got, moduleZip(t, "1.1.0")) {
			t.Errorf("%s: 1.1.0 from the first mapping", c.mode)
		}
	}
	fp.mode.Store("")
	if got := p.moduleArchive(t, "acme/network/aws", "1.0.0"); !bytes.Equal(got, moduleZip(t, "1.0.0")) {
		t.Fatal("after recovery: 1.0.0 is not the first mapping's")
	}
}

// The policy and the attestation rule apply to the merged view: a
// version the policy denies is served by no mapping; a copy the rule
// refuses is passed over for the next mapping's admitted copy, as the
// provider merged view passes over what a mapping does not serve.
func TestMergedModuleMappingsRules(t *testing.T) {
	first, second, openA, openB := twoModuleStores(t)
	pol := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{first, second}, RegistryHostname: "example.com", Policy: mustPolicy(t, `
module "example.com/acme/*/*" {
  name = "acme"
  deny = ["1.2.0"]
}`)})
	if got := pol.moduleVersions(t, "acme/network/aws"); !slices.Equal(got, []string{"1.0.0", "1.1.0"}) {
		t.Errorf("with the policy: %v, want 1.2.0 left out", got)
	}
	pol.wantError(t, "/v1/modules/acme/network/aws/1.2.0/download", http.StatusNotFound, `denied by the policy's rule "acme"`)

	s := attesttest.Signer(t)
	attested := moduleArtifact(t, moduleZip(t, "1.0.0 of the second mapping"))
	attestRoot(t, openB("acme", "network", "aws"), "acme/network/aws", attested, s, modulepkg.PredicateType)
	a11 := moduleArtifact(t, moduleZip(t, "1.1.0"))
	attestRoot(t, openA("acme", "network", "aws"), "acme/network/aws", a11, s, modulepkg.PredicateType)
	att := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{first, second}, RequireAttestation: []*attest.Verifier{s.Public()}})
	if got := att.moduleVersions(t, "acme/network/aws"); !slices.Equal(got, []string{"1.0.0", "1.1.0"}) {
		t.Errorf("with RequireAttestation: %v, want the attested 1.0.0 (second mapping) and 1.1.0 (first)", got)
	}
	if got := att.moduleArchive(t, "acme/network/aws", "1.0.0"); !bytes.Equal(got, moduleZip(t, "1.0.0 of the second mapping")) {
		t.Error("with RequireAttestation, 1.0.0 is not the attested copy")
	}
	att.wantError(t, "/v1/modules/acme/network/aws/1.2.0/download", http.StatusNotFound, "is not served: "+notAttested)
}
