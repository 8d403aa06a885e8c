package proxy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/convert/providerdocs"
	pubrelease "github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// A documentation category's page and its ?page=: a number past the
// last page, out of int's range, signed, spaced, hexadecimal, decimal
// or given twice, and category names that climb, are encoded, unicode,
// very long or a page's slug, each answer a 400 or 404 (never a 500,
// never another category's or provider's pages).
func TestCatalogDocCategoryPagingAndNames(t *testing.T) {
	p, dir := startProviderCatalog(t, "", Options{})
	attachDocs(t, dir, "team-b", "hello", "1.0.0", hostileDocs)
	const page = "/catalog/providers/example.com/team-b/hello/1.0.0"
	const cat = page + "/docs/resources"
	for path, status := range map[string]int{
		cat + "?page=1":                             http.StatusOK,
		cat + "?page=1&page=99":                     http.StatusOK,
		cat + "?page=-1":                            http.StatusBadRequest,
		cat + "?page=%2B1":                          http.StatusOK, // strconv.Atoi reads +1 as 1
		cat + "?page=%201":                          http.StatusBadRequest,
		cat + "?page=0x1":                           http.StatusBadRequest,
		cat + "?page=1.0":                           http.StatusBadRequest,
		cat + "?page=99999999999999999999":          http.StatusBadRequest,
		cat + "?page=1000001":                       http.StatusBadRequest,
		cat + "?q=" + strings.Repeat("a", 5000):     http.StatusBadRequest,
		page + "/docs/..":                           http.StatusBadRequest,
		page + "/docs/%2e%2e":                       http.StatusBadRequest,
		page + "/docs/resources%2fthing":            http.StatusBadRequest,
		page + "/docs/resources/..":                 http.StatusBadRequest,
		page + "/docs/r%C3%A9sources":               http.StatusNotFound,
		page + "/docs/" + strings.Repeat("r", 4096): http.StatusBadRequest,
		page + "/docs/thing":                        http.StatusNotFound,
		page + "/docs/guides":                       http.StatusNotFound,
		page + "/docs/":                             http.StatusBadRequest,
	} {
		r := p.get(t, path)
		if r.Status != status && !(status == http.StatusBadRequest && r.Status == http.StatusNotFound) {
			t.Errorf("%.120s: %d, want %d: %.300s", path, r.Status, status, r.Body)
		}
		if r.Status != http.StatusOK && strings.Contains(string(r.Body), "hello_thing") {
			t.Errorf("%.120s: %d shows a page: %.300s", path, r.Status, r.Body)
		}
	}
	// Past the last page: no entries, the count and pages as they are,
	// and the HTML links back to the last page rather than onward.
	c, r := getCatalog[catalog.ProviderDocCategoryPage](t, p, cat+"?page=7", nil)
	if r.Status != http.StatusOK || c.Entries == nil || len(c.Entries) != 0 || c.Total != 1 || c.Pages != 1 || c.Page != 7 {
		t.Errorf("page 7 of 1: %d %+v", r.Status, c)
	}
	html := p.get(t, cat+"?page=7")
	if strings.Contains(string(html.Body), `href="?page=8"`) {
		t.Errorf("page 7 of 1 links to page 8:\n%s", html.Body)
	}
	// The version's page counts what the category's page lists.
	v, _ := getCatalog[catalog.ProviderPage](t, p, page, nil)
	for _, dc := range v.Docs.Categories {
		c, r := getCatalog[catalog.ProviderDocCategoryPage](t, p, "/catalog/"+strings.TrimPrefix(dc.URL, "../../../../"), nil)
		if r.Status != http.StatusOK || c.Total != dc.Count || len(c.Entries) != min(dc.Count, catalog.PageSize) {
			t.Errorf("%s: %d total %d, the version's page counts %d", dc.URL, r.Status, c.Total, dc.Count)
		}
	}
}

// A documentation category's page (and its ?page=) of a provider out
// of a scoped caller's scope is the 404 of one that does not exist,
// byte for byte (the name swapped), in JSON and HTML, after the
// operator warmed them; of a version the policy denies or revokes, the
// 404 of the version's page (which says why to a caller in scope, as
// the provider's page does), without its documentation.
func TestCatalogDocCategoryHintsNothing(t *testing.T) {
	const token, admin = "token-of-a", "operator-token"
	p, dir := startProviderCatalog(t, fmt.Sprintf(`
provider "example.com/team-b/hello" {
  revoked {
    versions = "1.0.0"
    message  = "leaks the token"
  }
}
client "a" {
  tokens    = [%q]
  providers = ["example.com/team-a/*"]
}
`, policy.TokenHash(token)), Options{AuthTokens: []string{admin}})
	push(t, openLayout(t, dir, "team-b", "hello"), releaseArtifact(t, "1.1.0"), "1.1.0")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		attachDocs(t, dir, "team-b", "hello", v, hostileDocs)
	}
	for _, v := range []string{"1.0.0", "2.0.0-rc1"} {
		attachDocs(t, dir, "team-a", "hello", v, hostileDocs)
	}
	as := func(tok, accept string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + tok, "Accept": accept}
	}
	type pair struct {
		held, none, from, to, tok string
		same                      bool // byte for byte, else as the version's page
	}
	pairs := []pair{
		{"/catalog/providers/example.com/team-b/hello/1.1.0/docs/resources", "/catalog/providers/example.com/team-z/hello/1.1.0/docs/resources", "team-z", "team-b", token, true},
		{"/catalog/providers/example.com/team-b/hello/1.1.0/docs/resources?page=2", "/catalog/providers/example.com/team-z/hello/1.1.0/docs/resources?page=2", "team-z", "team-b", token, true},
		{"/catalog/providers/example.com/team-b/hello/1.1.0/docs/guides", "/catalog/providers/example.com/team-z/hello/1.1.0/docs/guides", "team-z", "team-b", token, true},
		{"/catalog/providers/example.com/team-b/hello/1.0.0/docs/resources", "/catalog/providers/example.com/team-b/hello/9.9.9/docs/resources", "9.9.9", "1.0.0", admin, false},
		{"/catalog/providers/example.com/team-a/hello/2.0.0-rc1/docs/resources", "/catalog/providers/example.com/team-a/hello/9.9.9/docs/resources", "9.9.9", "2.0.0-rc1", admin, false},
		{"/catalog/providers/example.com/team-a/hello/2.0.0-rc1/docs/resources", "/catalog/providers/example.com/team-a/hello/9.9.9/docs/resources", "9.9.9", "2.0.0-rc1", token, false},
	}
	for _, pr := range pairs {
		for _, accept := range []string{"application/json", "text/html"} {
			p.do(t, http.MethodGet, pr.held, as(admin, accept))
		}
	}
	for _, pr := range pairs {
		for _, accept := range []string{"application/json", "text/html"} {
			held := p.do(t, http.MethodGet, pr.held, as(pr.tok, accept))
			none := p.do(t, http.MethodGet, pr.none, as(pr.tok, accept))
			swapped := strings.ReplaceAll(string(none.Body), pr.from, pr.to)
			if !pr.same {
				none = p.do(t, http.MethodGet, strings.Split(pr.held, "/docs/")[0], as(pr.tok, accept))
				swapped = string(none.Body)
			}
			if held.Status != http.StatusNotFound || held.Status != none.Status || string(held.Body) != swapped {
				t.Errorf("%s (%s): %d, not as %s: %d\n%s\n---\n%s", pr.held, accept, held.Status, pr.none, none.Status, held.Body, swapped)
			}
			if strings.Contains(string(held.Body), "hello_thing") {
				t.Errorf("%s (%s) shows the documentation", pr.held, accept)
			}
		}
	}
}

// pushAnnotatedReferrer stores a referrer of version's index in repo,
// of artifactType with annotations ann and layer content: what anyone
// who may push could write.
func pushAnnotatedReferrer(t *testing.T, repo oci.Repository, version, artifactType string, ann map[string]string, content string) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	root, err := repo.Resolve(ctx, version)
	if err != nil {
		t.Fatal(err)
	}
	layer := oci.BytesBlob("application/octet-stream", []byte(content), nil)
	cfg := oci.BytesBlob(ocispec.MediaTypeEmptyJSON, []byte("{}"), nil)
	m, err := oci.EncodeManifest(ocispec.Manifest{ArtifactType: artifactType, Config: cfg.Descriptor, Layers: []ocispec.Descriptor{layer.Descriptor},
		Subject: &root, Annotations: ann})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := oci.Push(ctx, repo, &oci.Artifact{Blobs: []oci.Blob{layer, cfg}, Manifests: []oci.Manifest{m}}, oci.Tags{}, oci.PushOptions{}); err != nil {
		t.Fatal(err)
	}
	return m.Descriptor
}

// A referrer anyone may push, claiming the predicate type the
// attestation rule requires (its listing annotation) but holding no
// attestation, is never shown as verified beside the release's real,
// verified attestation; artifact and predicate types of script or a
// megabyte are escaped and clipped in HTML and JSON.
func TestCatalogStoredArtifactsClaimNoVerification(t *testing.T) {
	reg, p := startFactsRegistry(t, "", Options{})
	repo := registryRepo(t, reg, "p/test/hello")
	fake := pushAnnotatedReferrer(t, repo, "1.0.0", attach.ArtifactTypeSigstoreBundle,
		map[string]string{attest.AnnotationBundlePredicateType: pubrelease.ProviderPredicateType}, "not a bundle")
	huge := strings.Repeat("x", 1<<20)
	pushAnnotatedReferrer(t, repo, "1.0.0", "application/vnd.evil+<script>alert(1)</script>",
		map[string]string{attest.AnnotationBundlePredicateType: "<img src=x onerror=alert(2)>" + huge}, "script")

	const page = "/catalog/providers/example.com/test/hello/1.0.0"
	d, r := getCatalog[catalog.ProviderPage](t, p, page, nil)
	if r.Status != http.StatusOK || d.Attestation == nil || !d.Attestation.Admitted {
		t.Fatalf("%d %+v %.300s", r.Status, d.Attestation, r.Body)
	}
	for _, a := range d.Artifacts.Listed {
		if a.Digest == fake.Digest.String() && a.Verified != nil && *a.Verified {
			t.Errorf("the fake attestation %s is shown as verified: %+v", fake.Digest, a)
		}
		if len(a.ArtifactType) > 1024 || len(a.PredicateType) > 1024 {
			t.Errorf("an artifact's types are not clipped: %d, %d bytes", len(a.ArtifactType), len(a.PredicateType))
		}
	}
	if len(r.Body) > 256<<10 {
		t.Errorf("the JSON page is %d bytes", len(r.Body))
	}
	html := string(p.get(t, page).Body)
	if strings.Contains(html, "<script>alert") || strings.Contains(html, "<img src=x") || len(html) > 256<<10 {
		t.Errorf("the HTML holds the hostile types raw (%d bytes)", len(html))
	}
	i := strings.Index(html, fake.Digest.String())
	if i < 0 {
		t.Fatalf("the fake attestation is not listed:\n%s", html)
	}
	li := html[strings.LastIndex(html[:i], "<li>"):i]
	if strings.Contains(li, `class="ok">verified`) {
		t.Errorf("the HTML shows the fake attestation as verified: %s", li)
	}
}

// A release the attestation rule refuses (only a fake attestation
// stored) is not served: its page is a 404 naming the rule, listing no
// artifact as verified.
func TestCatalogRefusedReleaseShowsNoVerifiedArtifact(t *testing.T) {
	reg, p := startFactsRegistry(t, "", Options{})
	repo := registryRepo(t, reg, "p/test/other")
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	pushAnnotatedReferrer(t, repo, "1.0.0", attach.ArtifactTypeSigstoreBundle,
		map[string]string{attest.AnnotationBundlePredicateType: pubrelease.ProviderPredicateType}, "not a bundle")
	for _, accept := range []string{"application/json", "text/html"} {
		r := p.do(t, http.MethodGet, "/catalog/providers/example.com/test/other/1.0.0", map[string]string{"Accept": accept})
		if r.Status == http.StatusOK || strings.Contains(string(r.Body), `"verified"`) || strings.Contains(string(r.Body), `>verified<`) {
			t.Errorf("%s: %d %.600s", accept, r.Status, r.Body)
		}
	}
}

// Provider search by documentation names, with caches warmed by the
// operator: team-c/hello holds the very index team-b/hello does (the
// same digest) without documentation, so a cache keyed by content
// across repositories would lend it team-b's names. A scoped caller
// (team-a, team-c) finds nothing by team-b's names, byte for byte as a
// word found nowhere; team-c is never found by them, for anyone.
func TestCatalogDocSearchHintsNothing(t *testing.T) {
	const token, admin = "token-of-a", "operator-token"
	p, dir := startProviderCatalog(t, fmt.Sprintf(`
client "a" {
  tokens    = [%q]
  providers = ["example.com/team-a/*", "example.com/team-c/*"]
}
`, policy.TokenHash(token)), Options{AuthTokens: []string{admin}})
	push(t, openLayout(t, dir, "team-c", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	attachDocs(t, dir, "team-b", "hello", "1.0.0", hostileDocs)
	as := func(tok string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + tok, "Accept": "application/json"}
	}
	op, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?q=thing", as(admin))
	var got []string
	for _, e := range op.Providers {
		got = append(got, e.Address)
	}
	if r.Status != http.StatusOK || strings.Join(got, " ") != "example.com/team-b/hello" {
		t.Errorf("the operator finds %v by a documentation name, want team-b's alone: %d %.300s", got, r.Status, r.Body)
	}
	for _, q := range []string{"thing", "hello_thing", "hello thing"} {
		for _, accept := range []string{"application/json", "text/html"} {
			h := as(token)
			h["Accept"] = accept
			held := p.do(t, http.MethodGet, "/catalog/?q="+strings.ReplaceAll(q, " ", "+"), h)
			none := p.do(t, http.MethodGet, "/catalog/?q="+strings.ReplaceAll(strings.ReplaceAll(q, "thing", "qqqqq"), " ", "+"), h)
			if held.Status != none.Status || string(held.Body) != strings.ReplaceAll(string(none.Body), "qqqqq", "thing") {
				t.Errorf("q=%s (%s): not as a word found nowhere:\n%.600s\n---\n%.600s", q, accept, held.Body, none.Body)
			}
		}
	}
}

// A documentation referrer anyone may push with 100,000 resource pages
// (past providerdocs.MaxPages), and one with the longest names at the
// bound, leave the search bounded: the first is no documentation (the
// provider found by its address only), the second's names are found.
func TestCatalogDocSearchOfHugeReferrers(t *testing.T) {
	p, dir := startProviderCatalog(t, "", Options{})
	many := make([]providerdocs.Page, 100_000)
	for i := range many {
		many[i] = providerdocs.Page{Category: "resources", Slug: fmt.Sprintf("many%06d", i), Markdown: "x"}
	}
	hostileReferrer(t, openLayout(t, dir, "team-b", "hello"), "1.0.0", docsLayer(t, many...), nil)
	long := make([]providerdocs.Page, 2000)
	for i := range long {
		long[i] = providerdocs.Page{Category: "resources", Slug: fmt.Sprintf("long%04d", i) + strings.Repeat("y", providerdocs.MaxNameLength-8), Markdown: "x"}
	}
	repo := openLayout(t, dir, "team-c", "hello")
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	hostileReferrer(t, repo, "1.0.0", docsLayer(t, long...), nil)
	for q, want := range map[string]string{"many000123": "", "hello": "example.com/team-a/hello example.com/team-b/hello example.com/team-c/hello",
		"long1999": "example.com/team-c/hello", strings.Repeat("y", 100): "example.com/team-c/hello"} {
		idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?q="+q, nil)
		var got []string
		for _, e := range idx.Providers {
			got = append(got, e.Address)
		}
		if r.Status != http.StatusOK || strings.Join(got, " ") != want {
			t.Errorf("q=%.20s: %d %v, want %s", q, r.Status, got, want)
		}
	}
	if r := p.get(t, "/catalog/providers/example.com/team-b/hello/1.0.0"); r.Status != http.StatusOK || !strings.Contains(string(r.Body), catalog.NoDocs) {
		t.Errorf("the page of a release with 100,000 pages: %d", r.Status)
	}
}

// A cosign .att tag anyone may push, of 10,000 layers lying about their
// sizes with script in their media types, and one of 200: the version's
// page answers with at most MaxReferrersShown listed, every layer
// counted (the rest said), the types escaped and clipped, never a 500.
func TestCatalogStoredArtifactsOfHugeAttachments(t *testing.T) {
	for _, n := range []int{200, 10_000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			p, dir := startProviderCatalog(t, "", Options{})
			repo := openLayout(t, dir, "team-b", "hello")
			root, err := repo.Resolve(context.Background(), "1.0.0")
			if err != nil {
				t.Fatal(err)
			}
			long := strings.Repeat("z", 500)
			if n > 1000 {
				long = "" // under OpenTofu's 4 MiB manifest
			}
			m := ocispec.Manifest{Config: ocispec.DescriptorEmptyJSON, Layers: make([]ocispec.Descriptor, n)}
			for i := range m.Layers {
				m.Layers[i] = ocispec.Descriptor{MediaType: "application/x-<script>alert(1)</script>" + long,
					Digest: digest.FromString(fmt.Sprint(i)), Size: 1 << 62,
					Annotations: map[string]string{attach.AnnotationPredicateType: "<b>" + pubrelease.ProviderPredicateType}}
			}
			mf, err := oci.EncodeManifest(m)
			if err != nil {
				t.Fatal(err)
			}
			writeAttachment(t, repo, root.Digest, &oci.Artifact{Manifests: []oci.Manifest{mf}})
			const page = "/catalog/providers/example.com/team-b/hello/1.0.0"
			d, r := getCatalog[catalog.ProviderPage](t, p, page, nil)
			if r.Status != http.StatusOK || len(d.Artifacts.Listed) > catalog.MaxReferrersShown {
				t.Fatalf("%d: %d listed, note %q", r.Status, len(d.Artifacts.Listed), d.Artifacts.Note)
			}
			if a := d.Artifacts; a.Total != n || a.Rest != n-len(a.Listed) {
				t.Errorf("%d layers stored: total %d, rest %d, %d listed", n, a.Total, a.Rest, len(a.Listed))
			}
			for _, a := range d.Artifacts.Listed {
				if len(a.ArtifactType) > 200 || a.Verified != nil {
					t.Errorf("%+v", a)
				}
			}
			html := p.get(t, page)
			if html.Status != http.StatusOK || strings.Contains(string(html.Body), "<script>alert") || strings.Contains(string(html.Body), "<b>") {
				t.Errorf("HTML %d holds the types raw", html.Status)
			}
			t.Logf("%d layers: listed %d, total %d, rest %d, note %q", n, len(d.Artifacts.Listed), d.Artifacts.Total, d.Artifacts.Rest, d.Artifacts.Note)
		})
	}
}

// In an OCI layout, manifests that name the index without referring to
// it (as a layer, or with another subject beside it) are not listed as
// its stored artifacts.
func TestCatalogStoredArtifactsOfAnotherSubject(t *testing.T) {
	p, dir := startProviderCatalog(t, "", Options{})
	repo := openLayout(t, dir, "team-b", "hello")
	ctx := context.Background()
	root, err := repo.Resolve(ctx, "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	other := pushAnnotatedReferrer(t, repo, "1.0.0", "application/vnd.example.real", nil, "real")
	cfg := oci.BytesBlob(ocispec.MediaTypeEmptyJSON, []byte("{}"), nil)
	for i, subject := range []*ocispec.Descriptor{nil, &other} {
		m, err := oci.EncodeManifest(ocispec.Manifest{ArtifactType: fmt.Sprintf("application/vnd.example.elsewhere%d", i), Config: cfg.Descriptor,
			Layers: []ocispec.Descriptor{root}, Subject: subject})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := oci.Push(ctx, repo, &oci.Artifact{Blobs: []oci.Blob{cfg}, Manifests: []oci.Manifest{m}}, oci.Tags{}, oci.PushOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	d, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/team-b/hello/1.0.0", nil)
	if r.Status != http.StatusOK || d.Artifacts.Total != 1 || len(d.Artifacts.Listed) != 1 || d.Artifacts.Listed[0].ArtifactType != "application/vnd.example.real" {
		t.Errorf("%d %+v", r.Status, d.Artifacts)
	}
}

// A category page lists a hostile referrer's titles, subcategories and
// descriptions escaped: no script, no element of theirs.
func TestCatalogDocCategoryEscapesHostileTitles(t *testing.T) {
	p, dir := startProviderCatalog(t, "", Options{})
	hostileReferrer(t, openLayout(t, dir, "team-b", "hello"), "1.0.0", docsLayer(t, providerdocs.Page{Category: "resources", Slug: "thing",
		Title: `<script>alert(1)</script>`, Subcategory: `"><img src=x onerror=alert(2)>`, Description: "</li><script>alert(3)</script>\x1b[2J", Markdown: "x"}), nil)
	r := p.get(t, "/catalog/providers/example.com/team-b/hello/1.0.0/docs/resources")
	if r.Status != http.StatusOK || strings.Contains(string(r.Body), "<script>alert") || strings.Contains(string(r.Body), "<img src=x") {
		t.Errorf("%d %s", r.Status, r.Body)
	}
}
