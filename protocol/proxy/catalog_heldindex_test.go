package proxy

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
)

// heldIndexClient reaches reg's front, recording its publishes in the
// held-address index when index is set.
func heldIndexClient(t *testing.T, reg *testenv.Registry, index string) *oci.Client {
	t.Helper()
	c, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile, HeldIndex: index})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func openOn(t *testing.T, c *oci.Client, host, name string) oci.Repository {
	t.Helper()
	repo, err := c.Open(oci.Reference{Registry: host, Repository: name})
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// heldIndexCatalog is a cold serve of the providers and modules of host,
// reading the held-address index when index is set.
func heldIndexCatalog(t *testing.T, reg *testenv.Registry, host, index string) (catalog.IndexPage, response) {
	t.Helper()
	p := startProxy(t, Options{Client: heldIndexClient(t, reg, index), RegistryHostname: "example.com",
		ProviderMappings: mustMapping(t, host+"/acme/providers/${namespace}/${type}"),
		ModuleMappings:   []*repotemplate.Template{mustModuleTemplate(t, host+"/acme/modules/${namespace}/${name}/${system}")}})
	return getCatalog[catalog.IndexPage](t, p, "/catalog/?format=json", nil)
}

func heldNames(idx catalog.IndexPage) (providers, modules []string) {
	for _, e := range idx.Providers {
		providers = append(providers, e.Namespace+"/"+e.Type)
	}
	for _, e := range idx.Modules {
		modules = append(modules, e.Namespace+"/"+e.Name+"/"+e.System)
	}
	return providers, modules
}

// On a registry that refuses to list (GHCR, Docker Hub), a cold serve's
// catalogue lists the providers and modules pushed with a held-address
// index, not one pushed without it, and says it is not complete and
// why. On a registry that lists, catalog and index are complete, and
// what the catalog found is written back to the index.
func TestCatalogFromTheHeldIndex(t *testing.T) {
	reg := testenv.StartRegistry(t)
	refusing := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{
		Match: func(r *http.Request) bool { return r.URL.Path == "/v2/_catalog" },
		Fault: testenv.ErrorAnswer(http.StatusUnauthorized, "UNAUTHORIZED", "authentication required")}}})
	index := refusing.Host + "/acme/catalog"
	recording, plain := heldIndexClient(t, reg, index), heldIndexClient(t, reg, "")
	push(t, openOn(t, recording, refusing.Host, "acme/providers/team-a/hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	push(t, openOn(t, recording, refusing.Host, "acme/modules/net/vpc/aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), "1.0.0")
	push(t, openOn(t, plain, refusing.Host, "acme/providers/team-b/hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	push(t, openOn(t, plain, refusing.Host, "acme/modules/net/sg/aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), "1.0.0")

	idx, r := heldIndexCatalog(t, reg, refusing.Host, index)
	providers, modules := heldNames(idx)
	if r.Status != http.StatusOK || !slices.Equal(providers, []string{"team-a/hello"}) || !slices.Equal(modules, []string{"net/vpc/aws"}) {
		t.Errorf("catalogue from the index: %d providers %v modules %v, want team-a/hello and net/vpc/aws\n%s", r.Status, providers, modules, r.Body)
	}
	wantReason := "listed from the held-address index " + index + ", as " + refusing.Host +
		" does not list repositories (GET /v2/_catalog: 401 UNAUTHORIZED); repositories pushed without --catalog-repository are not shown"
	if idx.Complete || len(idx.Coverage) != 2 || idx.Coverage[0].Listed || idx.Coverage[0].Reason != wantReason || idx.Coverage[1].Reason != wantReason {
		t.Errorf("an index on a registry that cannot list: complete %v, coverage %+v, want not complete: %q", idx.Complete, idx.Coverage, wantReason)
	}
	if without, _ := heldIndexCatalog(t, reg, refusing.Host, ""); len(without.Providers)+len(without.Modules) != 0 {
		t.Errorf("without the index: %+v, want nothing listed", without)
	}

	listing := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
	idx, _ = heldIndexCatalog(t, reg, listing.Host, listing.Host+"/acme/catalog")
	providers, modules = heldNames(idx)
	if !idx.Complete || !slices.Equal(providers, []string{"team-a/hello", "team-b/hello"}) || !slices.Equal(modules, []string{"net/sg/aws", "net/vpc/aws"}) {
		t.Errorf("catalog and index: complete %v providers %v modules %v, want all, complete", idx.Complete, providers, modules)
	}
	repo, err := plain.OpenReadOnly(context.Background(), oci.Reference{Registry: listing.Host, Repository: "acme/catalog"})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := oci.ListHeldEntries(context.Background(), repo)
	if err != nil || !slices.Contains(entries, "acme/providers/team-b/hello") || !slices.Contains(entries, "acme/modules/net/sg/aws") {
		t.Errorf("the index after a listing: %v %v, want team-b and net/sg written back", entries, err)
	}
}

// serve refuses a held-address index on another registry than a mapping:
// pull-through would send that registry's credentials elsewhere.
func TestServeRefusesAnIndexOnAnotherRegistry(t *testing.T) {
	c, err := oci.NewClient(oci.Options{HeldIndex: "ghcr.io/acme/catalog"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{Client: c, ProviderMappings: mustMapping(t, "registry.example.com/acme/${namespace}/${type}")})
	if err == nil || !strings.Contains(err.Error(), "the held-address index ghcr.io/acme/catalog (--catalog-repository) is on ghcr.io, and the repository template registry.example.com/acme/${namespace}/${type} maps repositories elsewhere") {
		t.Errorf("an index on another registry: %v", err)
	}
}

// What pull-through stores is recorded in the held-address index of the
// proxy's client: a later cold serve of a registry that cannot list
// lists it.
func TestPullThroughRecordsInTheHeldIndex(t *testing.T) {
	reg := testenv.StartRegistry(t)
	refusing := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{{
		Match: func(r *http.Request) bool { return r.URL.Path == "/v2/_catalog" },
		Fault: testenv.ErrorAnswer(http.StatusForbidden, "DENIED", "denied")}}})
	index := refusing.Host + "/acme/catalog"
	origin := testenv.StartOriginWith(t, []testenv.OriginRelease{{Namespace: "acme", Type: "small",
		Dir: signedRelease(t, "small", "1.0.0", 1<<10, "linux_amd64"), Key: testenv.Testdata(t, "keys", "gocrypto-signer.asc")}}, testenv.OriginOptions{})
	base, _ := url.Parse(origin.ProvidersURL())
	tpl := refusing.Host + "/acme/providers/${hostname}/${namespace}/${type}"
	p := startProxy(t, Options{Client: heldIndexClient(t, reg, index), ProviderMappings: mustMapping(t, tpl),
		PullThrough: &pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, Client: originClient(t)}})
	if r := p.get(t, pullURL(t, p, "example.com/acme/small", "1.0.0", "linux_amd64")); r.Status != http.StatusOK {
		t.Fatalf("pull: %d %s", r.Status, r.Body)
	}
	waitIdle(t, p)

	cold := startProxy(t, Options{Client: heldIndexClient(t, reg, index), ProviderMappings: mustMapping(t, tpl)})
	idx, _ := getCatalog[catalog.IndexPage](t, cold, "/catalog/?format=json", nil)
	if len(idx.Providers) != 1 || idx.Providers[0].Address != "example.com/acme/small" || idx.Complete {
		t.Errorf("a cold serve after a pull-through: %+v, want example.com/acme/small, not complete", idx)
	}
}
