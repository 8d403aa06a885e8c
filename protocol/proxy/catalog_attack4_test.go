package proxy

import (
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/providerdocs"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// gzipped is b gzipped.
func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// docsLayer is pages as a stored documentation layer, written as any
// tool could write it (no check of ours on the way).
func docsLayer(t testing.TB, pages ...providerdocs.Page) []byte {
	t.Helper()
	j, err := json.Marshal(providerdocs.Docs{Format: providerdocs.Format, Pages: pages})
	if err != nil {
		t.Fatal(err)
	}
	return gzipped(t, j)
}

// hostileReferrer writes layer as a documentation referrer of the
// index tagged version in repo, as oras could (annotations ann), and
// returns its descriptor.
func hostileReferrer(t testing.TB, repo oci.Repository, version string, layer []byte, ann map[string]string) ocispec.Descriptor {
	t.Helper()
	root, err := repo.Resolve(context.Background(), version)
	if err != nil {
		t.Fatal(err)
	}
	d, err := attach.WriteReferrer(context.Background(), repo, root, providerdocs.ArtifactType,
		[]attach.AttachmentLayer{{MediaType: providerdocs.LayerMediaType, Payload: layer}}, ann)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// openLayout opens the layout repository dir/ns/typ.
func openLayout(t testing.TB, dir, ns, typ string) oci.Repository {
	t.Helper()
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Layout: true, Repository: dir + "/" + ns + "/" + typ})
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// Documentation referrers written by anyone who may push (oras, not
// push provider --docs): a gzip bomb, pages with names that climb out
// of the tree or name other categories, one page twice, a chain of
// replacements, and hostile front matter and links. Each page answers
// (never a 500, never a panic), shows what it can read and says why
// not otherwise; no page links to another provider's pages, loads
// anything, or holds script.
func TestCatalogProviderDocsFromHostileReferrers(t *testing.T) {
	p, dir := startProviderCatalog(t, "", Options{})
	// Each case in a namespace of its own, at 1.0.0 (the same index
	// digest in each repository: each shows its own referrers only).
	rel := releaseArtifact(t, "1.0.0")
	repos := map[string]oci.Repository{}
	for _, ns := range []string{"bomb", "names", "twice", "chain", "hostile", "replaced"} {
		repos[ns] = openLayout(t, dir, ns, "hello")
		push(t, repos[ns], rel, "1.0.0")
	}
	page := func(ns string) string { return "/catalog/providers/example.com/" + ns + "/hello/1.0.0" }

	// bomb: a gzip bomb (its JSON inflates far past the bound).
	bomb := gzipped(t, append([]byte(`{"format":1,"pages":[{"category":"index","slug":"index","markdown":"`),
		bytes.Repeat([]byte("a"), 80<<20)...))
	hostileReferrer(t, repos["bomb"], "1.0.0", bomb, nil)

	// names: names that are no page names or categories.
	for _, pg := range []providerdocs.Page{
		{Category: "resources", Slug: "..", Markdown: "x"},
		{Category: "resources", Slug: "a/b", Markdown: "x"},
		{Category: "../resources", Slug: "a", Markdown: "x"},
		{Category: "resources", Slug: "a%2fb", Markdown: "x"},
		{Category: "resources", Slug: "\u00e9t\u00e9", Markdown: "x"},
		{Category: "resources", Slug: strings.Repeat("a", providerdocs.MaxNameLength+1), Markdown: "x"},
	} {
		hostileReferrer(t, repos["names"], "1.0.0", docsLayer(t, pg), nil)
	}

	// twice: one page twice, with different titles and texts.
	hostileReferrer(t, repos["twice"], "1.0.0", docsLayer(t,
		providerdocs.Page{Category: "resources", Slug: "thing", Title: "First", Markdown: "first text"},
		providerdocs.Page{Category: "resources", Slug: "thing", Title: "Second", Markdown: "second text"}), nil)

	// chain: a chain of replacements: c replaces b, b replaces a.
	a := hostileReferrer(t, repos["chain"], "1.0.0", docsLayer(t, providerdocs.Page{Category: "index", Slug: "index", Title: "A", Markdown: "a"}), nil)
	b := hostileReferrer(t, repos["chain"], "1.0.0", docsLayer(t, providerdocs.Page{Category: "index", Slug: "index", Title: "B", Markdown: "b"}),
		map[string]string{providerdocs.AnnotationReplaces: a.Digest.String()})
	hostileReferrer(t, repos["chain"], "1.0.0", docsLayer(t, providerdocs.Page{Category: "index", Slug: "index", Title: "C", Markdown: "c"}),
		map[string]string{providerdocs.AnnotationReplaces: b.Digest.String()})

	// hostile: hostile front matter, a path out of the tree, links to
	// other providers' pages and other hosts, images.
	hostileReferrer(t, repos["hostile"], "1.0.0", docsLayer(t, providerdocs.Page{Category: "index", Slug: "index", Path: "../../../../team-a/hello/index.md",
		Title: `<script>alert(1)</script>`, Subcategory: `"><img src=x onerror=alert(2)>`, Description: `</title><script>alert(3)</script>`,
		Markdown: "[abs](/catalog/providers/example.com/team-a/hello/1.0.0/docs/index/index) " +
			"[up](../../../team-a/hello/1.0.0/docs/index/index.md) [proto](//evil.example/x) [enc](..%2F..%2Findex.md) " +
			"![img](https://evil.example/i.png) ![rel](../../team-a/logo.png) [self](index.md)\n"}), nil)

	// replaced: the real documentation, then a referrer that replaces it
	// and cannot be read: the release then carries none that can be read.
	real := hostileReferrer(t, repos["replaced"], "1.0.0", docsLayer(t, providerdocs.Page{Category: "index", Slug: "index", Title: "Real", Markdown: "real"}), nil)
	hostileReferrer(t, repos["replaced"], "1.0.0", []byte("not gzip"), map[string]string{providerdocs.AnnotationReplaces: real.Digest.String()})

	for v, want := range map[string]string{
		"bomb": "", "names": "", "twice": "", "chain": "C", "hostile": `<script>alert(1)</script>`, "replaced": "",
	} {
		d, r := getCatalog[catalog.ProviderPage](t, p, page(v), nil)
		if r.Status != http.StatusOK {
			t.Errorf("%s: %d %s", v, r.Status, r.Body)
			continue
		}
		var titles []string
		for _, c := range d.Docs.Categories {
			for _, pg := range c.Pages {
				titles = append(titles, pg.Title)
			}
		}
		switch {
		case want == "" && (d.Docs.Stored || !strings.HasPrefix(d.Docs.Note, catalog.NoDocs+" that can be read: ")):
			t.Errorf("%s: docs %+v, want none that can be read, and why", v, d.Docs)
		case want != "" && strings.Join(titles, ",") != want:
			t.Errorf("%s: titles %q, want %q (%+v)", v, titles, want, d.Docs)
		}
		html := p.get(t, page(v))
		if html.Status != http.StatusOK || strings.Contains(string(html.Body), "<script>alert") {
			t.Errorf("%s HTML: %d\n%s", v, html.Status, html.Body)
		}
	}
	if r := p.get(t, page("twice")+"/docs/resources/thing"); r.Status != http.StatusNotFound {
		t.Errorf("a page stored twice: %d\n%s", r.Status, r.Body)
	}
	doc := p.get(t, page("hostile")+"/docs/index/index")
	body := string(doc.Body)
	if doc.Status != http.StatusOK {
		t.Fatalf("hostile page: %d %s", doc.Status, body)
	}
	for _, bad := range []string{"<script", "<img", "team-a/hello/1.0.0/docs", `href="//`, "evil.example/x\""} {
		if strings.Contains(body, bad) {
			t.Errorf("hostile page holds %q:\n%s", bad, body)
		}
	}
	if !strings.Contains(body, `href="../../../../../../../providers/example.com/hostile/hello/1.0.0/docs/index/index"`) {
		t.Errorf("hostile page does not link itself:\n%s", body)
	}
}

// doWithHost is a GET of path from p over HTTP/1.1 with the request's
// Host header exactly host (which Go's client would refuse to send).
func (p *proxy) doWithHost(t testing.TB, path, host string) response {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(p.URL, "https://"), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}) //nolint:gosec // the test server's own certificate
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, rerr := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: body, Err: rerr}
}

// hostileTofuRelease is an OpenTofu release pushed by anyone, not by
// push tofu: files whose names are shell, quotes, URL syntax and
// markup, one of them with an archive's name around a command.
func hostileTofuRelease(t testing.TB, version string) *oci.Artifact {
	t.Helper()
	files := []string{
		"tofu_" + version + "_linux_amd64.tar.gz",
		"tofu_" + version + "_linux_amd64$(touch pwned).tar.gz",
		"tofu_" + version + "_$(id)_amd64.zip",
		"a b?c=d#e",
		`';touch pwned;'`,
		"`touch pwned`",
		`"><b onmouseover=alert(1)>x`,
		"100%.txt",
	}
	var blobs []oci.Blob
	for _, name := range files {
		blobs = append(blobs, oci.BytesBlob(oci.MediaTypeReleaseFile, []byte("file "+name), map[string]string{ocispec.AnnotationTitle: name}))
	}
	a, err := oci.BuildTofuRelease(version, blobs)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// An OpenTofu release pushed by anyone with file names that are shell,
// quotes, URL syntax or markup is no release (names.ValidTofuArtifact):
// left out of the page, whose install script then names only what a
// valid release gives (the version and platforms, both parsed). Absolute
// URLs come from the Host the client reached the proxy by: a Host that
// is no host[:port] (a path, userinfo, shell, a port that is no
// number) is a 400 with no page, and one Host's URLs
// never reach another's answer.
func TestCatalogTofuPageOfAHostileRelease(t *testing.T) {
	ref, repo := tofuLayout(t)
	pushTofuFixture(t, repo, "1.8.0")
	a := hostileTofuRelease(t, "1.9.0")
	push(t, repo, a, "1.9.0")
	p := startProxy(t, Options{TofuRepository: &ref})

	if r := p.get(t, "/catalog/tofu/1.9.0"); r.Status != http.StatusNotFound || strings.Contains(string(r.Body), "pwned") {
		t.Errorf("the hostile release: %d %s", r.Status, r.Body)
	}
	d, r := getCatalog[catalog.TofuPage](t, p, "/catalog/tofu", nil)
	if r.Status != http.StatusOK || d.Version != "1.8.0" || len(d.Versions) != 1 {
		t.Fatalf("%d %+v\n%s", r.Status, d, r.Body)
	}
	for _, f := range d.Files {
		if got := p.get(t, f.URL); got.Status != http.StatusOK {
			t.Errorf("%q at %s: %d", f.Name, f.URL, got.Status)
		}
	}

	_, port, _ := strings.Cut(strings.TrimPrefix(p.URL, "https://"), ":")
	for _, host := range []string{"evil.example.", "evil.example/x", "user@evil.example", "evil.example:" + port + "@other.example", "evil.example:x",
		"evil.example;touch pwned", "evil.example'", "evil.example$(id)", "evil.example:1/a"} {
		r := p.doWithHost(t, "/catalog/tofu/1.8.0?format=json", host)
		if r.Status != http.StatusBadRequest || strings.Contains(string(r.Body), "pwned") || strings.Contains(string(r.Body), "other.example") {
			t.Errorf("Host %q: %d\n%s", host, r.Status, r.Body)
		}
	}
	for _, host := range []string{"one.example:" + port, "two.example:" + port, "ONE.example:" + port} {
		r := p.doWithHost(t, "/catalog/tofu/1.8.0?format=json", host)
		var got catalog.TofuPage
		if err := json.Unmarshal(r.Body, &got); err != nil || r.Status != http.StatusOK {
			t.Fatalf("Host %q: %d %v %s", host, r.Status, err, r.Body)
		}
		want := "https://" + strings.ToLower(host) + "/tofu/"
		if !strings.HasPrefix(got.Install.APIURL, want) || !strings.HasPrefix(got.Files[0].URL, want) || strings.Count(got.Install.Script, "https://") != strings.Count(got.Install.Script, want) {
			t.Errorf("Host %q: URLs not of that host: %+v %+v", host, got.Install, got.Files[0])
		}
		if r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("Host %q: Cache-Control %q", host, r.Header.Get("Cache-Control"))
		}
	}
}

// manyFilesZip is a module zip of n empty files: a central directory
// far past what an interface is read from.
func manyFilesZip(t testing.TB, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range n {
		if _, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("d/f%06d.tf", i), Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// addressesOf are the addresses of idx's modules, in order.
func addressesOf(idx catalog.IndexPage) []string {
	var out []string
	for _, m := range idx.Modules {
		out = append(out, m.Address)
	}
	return out
}

// A module pushed by another tool whose zip cannot be read (not a zip,
// a central directory past the bounds) is one module whose interface
// cannot be read on first view: its page says so, and the searches and
// filters that read every module's interface still answer everyone, for
// the modules that can be read.
func TestCatalogUnreadablePackageDeniesNoSearch(t *testing.T) {
	mdir, mopen := moduleStore(t)
	push(t, mopen("acme", "vpc", "aws"), moduleArtifact(t, vpcModule(t, "1.0.0")), "1.0.0")
	push(t, mopen("evil", "garbage", "aws"), moduleArtifact(t, []byte("PK\x03\x04 this is no zip at all")), "1.0.0")
	push(t, mopen("evil", "wide", "aws"), moduleArtifact(t, manyFilesZip(t, 20000)), "1.0.0")
	p := startProxy(t, Options{RegistryHostname: "example.com",
		ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")}})
	for query, want := range map[string]string{"q=cidr": "example.com/acme/vpc/aws", "provider=hashicorp/aws": "example.com/acme/vpc/aws",
		"q=nothing-has-this": "", "q=aws": "example.com/acme/vpc/aws,example.com/evil/garbage/aws,example.com/evil/wide/aws"} {
		idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?"+query, nil)
		if got := strings.Join(addressesOf(idx), ","); r.Status != http.StatusOK || got != want {
			t.Errorf("?%s: %d %q, want %q\n%.400s", query, r.Status, got, want, r.Body)
		}
	}
	d, r := getCatalog[catalog.ModulePage](t, p, "/catalog/modules/example.com/evil/garbage/aws/1.0.0", nil)
	if r.Status != http.StatusOK || len(d.Diagnostics) != 1 || !strings.Contains(d.Diagnostics[0].Detail, "zip") {
		t.Errorf("the unreadable package's page: %d %+v\n%.400s", r.Status, d.Diagnostics, r.Body)
	}
	if _, r := getCatalog[catalog.ModulePage](t, p, "/catalog/modules/example.com/evil/wide/aws/1.0.0", nil); r.Status != http.StatusOK {
		t.Errorf("the wide package's page: %d %.400s", r.Status, r.Body)
	}
}

// A module repository whose newest tag holds no module package (another
// artifact, pushed by anyone) fails no search, filter or index either.
func TestCatalogForeignArtifactDeniesNoSearch(t *testing.T) {
	mdir, mopen := moduleStore(t)
	push(t, mopen("acme", "vpc", "aws"), moduleArtifact(t, vpcModule(t, "1.0.0")), "1.0.0")
	push(t, mopen("evil", "foreign", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), "1.0.0")
	push(t, mopen("evil", "foreign", "aws"), releaseArtifact(t, "1.1.0"), "1.1.0")
	p := startProxy(t, Options{RegistryHostname: "example.com",
		ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")}})
	for query, want := range map[string]string{"": "example.com/acme/vpc/aws,example.com/evil/foreign/aws", "q=cidr": "example.com/acme/vpc/aws",
		"provider=hashicorp/aws": "example.com/acme/vpc/aws", "status=served": "example.com/acme/vpc/aws", "status=denied": "",
		"q=foreign": "example.com/evil/foreign/aws", "q=aws&status=served": "example.com/acme/vpc/aws"} {
		idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?"+query, nil)
		if got := strings.Join(addressesOf(idx), ","); r.Status != http.StatusOK || got != want {
			t.Errorf("?%s: %d %q, want %q\n%.300s", query, r.Status, got, want, r.Body)
		}
	}
	// Its index entry names the newest module package as latest, as its
	// page and the protocol do, not the newest tag.
	idx, _ := getCatalog[catalog.IndexPage](t, p, "/catalog/?q=foreign", nil)
	if len(idx.Modules) != 1 || idx.Modules[0].Latest != "1.0.0" {
		t.Errorf("the index's entry of evil/foreign/aws: %+v, want latest 1.0.0", idx.Modules)
	}
	// Its page is its newest module package's, the tag that holds none
	// left out of its versions as the Module Registry Protocol leaves it.
	d, r := getCatalog[catalog.ModulePage](t, p, "/catalog/modules/example.com/evil/foreign/aws", nil)
	if r.Status != http.StatusOK || d.Version != "1.0.0" || len(d.Versions) != 1 {
		t.Errorf("the module's page: %d %s %+v\n%.300s", r.Status, d.Version, d.Versions, r.Body)
	}
	if r := p.get(t, "/catalog/modules/example.com/evil/foreign/aws/1.1.0"); r.Status < 400 {
		t.Errorf("the tag holding no module package: %d %.300s", r.Status, r.Body)
	}
}

// The same for providers: a provider repository whose newest tag holds
// a module package, or a manifest that is no release, or that holds no
// release at all, fails no index, search or filter, and the other
// providers' pages answer.
func TestCatalogForeignProviderArtifactDeniesNoSearch(t *testing.T) {
	p, dir := startProviderCatalog(t, "", Options{})
	evil := openLayout(t, dir, "evil", "hello")
	push(t, evil, releaseArtifact(t, "1.0.0"), "1.0.0")
	push(t, evil, moduleArtifact(t, moduleZip(t, "1.1.0")), "1.1.0")
	push(t, evil, hostileTofuRelease(t, "1.2.0"), "1.2.0")
	push(t, openLayout(t, dir, "junk", "hello"), moduleArtifact(t, moduleZip(t, "1.0.0")), "1.0.0") // no release at all
	for query, want := range map[string]int{"": 4, "kind=provider": 4, "q=hello": 4, "q=evil": 1, "status=served": 2, "status=deprecated": 1,
		"namespace=evil": 1, "provider=example.com/evil/hello": 1} {
		idx, r := getCatalog[catalog.IndexPage](t, p, "/catalog/?"+query, nil)
		if r.Status != http.StatusOK || idx.ProviderTotal != want {
			t.Errorf("?%s: %d %d providers, want %d\n%.300s", query, r.Status, idx.ProviderTotal, want, r.Body)
		}
	}
	if d, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/evil/hello", nil); r.Status != http.StatusOK || d.Version != "1.0.0" {
		t.Errorf("evil/hello's page: %d %s %.300s", r.Status, d.Version, r.Body)
	}
	if r := p.get(t, "/catalog/providers/example.com/junk/hello"); r.Status != http.StatusNotFound {
		t.Errorf("junk/hello's page: %d %.300s", r.Status, r.Body)
	}
}

// A scoped caller learns nothing of what is out of its scope from any
// filter, count, page link or empty-result message: every answer about
// an out-of-scope name is the answer about a name that does not exist
// (byte for byte once the name asked is swapped), in JSON and HTML,
// after the operator warmed every cache; out-of-scope documentation
// pages are the 404 of a provider that does not exist.
func TestCatalogScopedFiltersHintNothing(t *testing.T) {
	const token, admin = "token-of-a", "operator-token"
	p, dir := startProviderCatalog(t, fmt.Sprintf(`
client "a" {
  tokens    = [%q]
  providers = ["example.com/team-a/*"]
}
`, policy.TokenHash(token)), Options{AuthTokens: []string{admin}})
	attachDocs(t, dir, "team-b", "hello", "1.0.0", hostileDocs)
	as := func(tok, accept string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + tok, "Accept": accept}
	}
	// Each pair: about team-b (held, out of a's scope) and about a name
	// held nowhere.
	pairs := [][2]string{
		{"/catalog/?namespace=team-b", "/catalog/?namespace=team-z"},
		{"/catalog/?provider=example.com/team-b/hello", "/catalog/?provider=example.com/team-z/hello"},
		{"/catalog/?q=team-b", "/catalog/?q=team-z"},
		{"/catalog/?q=team-b&status=served", "/catalog/?q=team-z&status=served"},
		{"/catalog/?kind=provider&namespace=team-b&page=2", "/catalog/?kind=provider&namespace=team-z&page=2"},
		{"/catalog/providers/example.com/team-b/hello", "/catalog/providers/example.com/team-z/hello"},
		{"/catalog/providers/example.com/team-b/hello/1.0.0/docs/index/index", "/catalog/providers/example.com/team-z/hello/1.0.0/docs/index/index"},
		{"/catalog/providers/example.com/team-b/hello/1.0.0/docs/resources/thing", "/catalog/providers/example.com/team-z/hello/1.0.0/docs/resources/thing"},
	}
	for _, pair := range pairs {
		for _, accept := range []string{"application/json", "text/html"} {
			if r := p.do(t, http.MethodGet, pair[0], as(admin, accept)); r.Status != http.StatusOK && !strings.Contains(pair[0], "page=2") {
				t.Fatalf("operator %s: %d %.200s", pair[0], r.Status, r.Body)
			}
		}
	}
	for _, pair := range pairs {
		for _, accept := range []string{"application/json", "text/html"} {
			held := p.do(t, http.MethodGet, pair[0], as(token, accept))
			none := p.do(t, http.MethodGet, pair[1], as(token, accept))
			swapped := strings.ReplaceAll(string(none.Body), "team-z", "team-b")
			if held.Status != none.Status || string(held.Body) != swapped {
				t.Errorf("%s (%s): %d, not as %s: %d\n%s\n---\n%s", pair[0], accept, held.Status, pair[1], none.Status, held.Body, swapped)
			}
			if strings.Contains(string(held.Body), "hello_thing") {
				t.Errorf("%s (%s) shows team-b's documentation", pair[0], accept)
			}
		}
	}
}

// With --registry-decides, a documentation page is shown to a registry
// credential that reads the provider's repository only: bob (team-b/)
// reads team-b's pages; alice (team-a/) gets the 404 of a provider that
// does not exist, for the page and the listing, after bob warmed them.
func TestCatalogRegistryDecidesProviderDocs(t *testing.T) {
	reg := teamRegistry(t)
	for _, ns := range []string{"team-a", "team-b"} {
		pushTo(t, reg, "providers/"+ns+"/hello", releaseArtifact(t, "1.0.0"), "1.0.0")
	}
	repo, err := proxyClient(t, reg).Open(oci.Reference{Registry: reg.Host, Repository: "providers/team-b/hello"})
	if err != nil {
		t.Fatal(err)
	}
	hostileReferrer(t, repo, "1.0.0", docsLayer(t, providerdocs.Page{Category: "index", Slug: "index", Title: "team-b's secret docs", Markdown: "secret"}), nil)
	p := registryDecidesProxy(t, reg, Options{RegistryHostname: "example.com"})
	const page = "/catalog/providers/example.com/team-b/hello/1.0.0"
	for _, path := range []string{page, page + "/docs/index/index"} {
		if _, r := getCatalog[json.RawMessage](t, p, path, bearer("bob:bob-Pa55")); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "secret docs") {
			t.Fatalf("bob %s: %d %.300s", path, r.Status, r.Body)
		}
	}
	for _, path := range []string{page, page + "/docs/index/index", "/catalog/?q=team-b", "/catalog/?namespace=team-b", "/catalog/?kind=provider"} {
		_, r := getCatalog[json.RawMessage](t, p, path, bearer("alice:alice-Pa55"))
		if strings.Contains(string(r.Body), "secret") || strings.Contains(string(r.Body), "team-b/hello\"") || strings.HasPrefix(path, page) && r.Status != http.StatusNotFound {
			t.Errorf("alice %s: %d %.300s", path, r.Status, r.Body)
		}
	}
}

// A revoked version's documentation is not shown: its pages are 404s
// with the version's page, and the served version's pages answer; the
// provider's page lists the revoked version with its message only.
func TestCatalogRevokedVersionShowsNoDocs(t *testing.T) {
	p, dir := startProviderCatalog(t, `
provider "example.com/team-b/hello" {
  revoked {
    versions = "1.0.0"
    message  = "leaks the token"
  }
}
`, Options{})
	push(t, openLayout(t, dir, "team-b", "hello"), releaseArtifact(t, "1.1.0"), "1.1.0")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		attachDocs(t, dir, "team-b", "hello", v, hostileDocs)
	}
	const page = "/catalog/providers/example.com/team-b/hello/"
	for path, want := range map[string]int{
		page + "1.0.0": http.StatusNotFound, page + "1.0.0/docs/index/index": http.StatusNotFound, page + "1.0.0/docs/resources/thing": http.StatusNotFound,
		page + "1.1.0": http.StatusOK, page + "1.1.0/docs/resources/thing": http.StatusOK,
	} {
		if r := p.get(t, path); r.Status != want || want != http.StatusOK && strings.Contains(string(r.Body), "hello_thing") {
			t.Errorf("%s: %d, want %d\n%.300s", path, r.Status, want, r.Body)
		}
	}
	d, _ := getCatalog[catalog.ProviderPage](t, p, page+"1.1.0", nil)
	if len(d.Versions) != 2 || d.Versions[1].Status != catalog.StatusRevoked || d.Versions[1].Message != "leaks the token" {
		t.Errorf("versions: %+v", d.Versions)
	}
}

// Every catalogue answer, JSON or HTML, GET or HEAD, an error too, is
// kept by no cache and says it varies by Accept and Authorization: one caller's
// page (its scope, the Host its URLs name) never answers another.
func TestCatalogAnswersAreKeptByNoCache(t *testing.T) {
	ref, repo := tofuLayout(t)
	pushTofuFixture(t, repo, "1.9.0")
	p, dir := startProviderCatalog(t, "", Options{TofuRepository: &ref})
	attachDocs(t, dir, "team-b", "hello", "1.0.0", hostileDocs)
	for _, path := range []string{"/catalog/providers/example.com/team-b/hello/1.0.0/docs/resources/nothing", "/catalog/tofu/1.7.0", "/catalog/?kind=x"} {
		if r := p.get(t, path); r.Status < 400 || r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: %d Cache-Control %q, want an error kept by no cache", path, r.Status, r.Header.Get("Cache-Control"))
		}
	}
	for _, path := range []string{"/catalog/", "/catalog/?q=hello", "/catalog/tofu", "/catalog/tofu/1.9.0",
		"/catalog/providers/example.com/team-b/hello/1.0.0", "/catalog/providers/example.com/team-b/hello/1.0.0/docs/resources/thing"} {
		for _, accept := range []string{"application/json", "text/html", ""} {
			get := p.do(t, http.MethodGet, path, map[string]string{"Accept": accept})
			head := p.do(t, http.MethodHead, path, map[string]string{"Accept": accept})
			for what, r := range map[string]response{"GET": get, "HEAD": head} {
				vary := strings.Join(r.Header.Values("Vary"), ",")
				if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" || !strings.Contains(vary, "Accept") || !strings.Contains(vary, "Authorization") {
					t.Errorf("%s %s (%q): %d Cache-Control %q Vary %q", what, path, accept, r.Status, r.Header.Get("Cache-Control"), vary)
				}
			}
			if len(head.Body) != 0 || head.Header.Get("Content-Type") != get.Header.Get("Content-Type") {
				t.Errorf("HEAD %s (%q): %d bytes, Content-Type %q, GET's %q", path, accept, len(head.Body), head.Header.Get("Content-Type"), get.Header.Get("Content-Type"))
			}
		}
	}
}

// With --registry-decides, the OpenTofu releases are in the catalogue
// of a registry credential that reads their repository only: alice
// (tofu/ granted) sees them; bob does not, in the index or any filter,
// and their pages are 404s, after alice warmed every cache.
func TestCatalogRegistryDecidesTofu(t *testing.T) {
	reg := testenv.StartTokenRegistry(t, "proxy", "proxy-Pa55")
	reg.Token.AddUser("alice", "alice-Pa55", "tofu/")
	reg.Token.AddUser("bob", "bob-Pa55", "modules/")
	repo, err := proxyClient(t, reg).Open(oci.Reference{Registry: reg.Host, Repository: "tofu/opentofu"})
	if err != nil {
		t.Fatal(err)
	}
	pushTofuFixture(t, repo, "1.9.0")
	ref := oci.Reference{Registry: reg.Host, Repository: "tofu/opentofu"}
	p := startProxy(t, Options{Client: proxyClient(t, reg), TofuRepository: &ref, RegistryDecides: true})
	paths := []string{"/catalog/", "/catalog/?kind=tofu", "/catalog/?q=tofu&status=served", "/catalog/tofu", "/catalog/tofu/1.9.0"}
	for _, path := range paths {
		if _, r := getCatalog[json.RawMessage](t, p, path, bearer("alice:alice-Pa55")); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "1.9.0") {
			t.Fatalf("alice %s: %d %.300s", path, r.Status, r.Body)
		}
	}
	for _, path := range paths {
		_, r := getCatalog[json.RawMessage](t, p, path, bearer("bob:bob-Pa55"))
		if strings.Contains(string(r.Body), "1.9.0") || strings.HasPrefix(path, "/catalog/tofu") && r.Status != http.StatusNotFound {
			t.Errorf("bob %s: %d %.300s", path, r.Status, r.Body)
		}
	}
}

// lyingReferrer writes, as a hand-made manifest, a documentation
// referrer of version's index in repo whose one layer is layer but
// whose descriptor says it is size bytes.
func lyingReferrer(t testing.TB, repo oci.Repository, version string, layer []byte, size int64) {
	t.Helper()
	ctx := context.Background()
	root, err := repo.Resolve(ctx, version)
	if err != nil {
		t.Fatal(err)
	}
	blob := oci.BytesBlob(providerdocs.LayerMediaType, layer, nil)
	for _, b := range []oci.Blob{blob, oci.EmptyConfig()} {
		rc, err := b.Open()
		if err != nil {
			t.Fatal(err)
		}
		if err := repo.Push(ctx, b.Descriptor, rc); err != nil && !strings.Contains(err.Error(), "exists") {
			t.Fatal(err)
		}
		rc.Close()
	}
	l := blob.Descriptor
	l.Size = size
	m, err := oci.EncodeManifest(ocispec.Manifest{ArtifactType: providerdocs.ArtifactType, Config: ocispec.DescriptorEmptyJSON,
		Layers: []ocispec.Descriptor{l}, Subject: &ocispec.Descriptor{MediaType: root.MediaType, Digest: root.Digest, Size: root.Size}})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Push(ctx, m.Descriptor, bytes.NewReader(m.Bytes)); err != nil {
		t.Fatal(err)
	}
}

// Documentation referrers whose layer descriptors lie about the size
// (smaller than the layer, or a terabyte) are not read past what they
// say nor fetched past the bound: the page answers, saying the release
// carries no documentation that can be read.
func TestCatalogProviderDocsWithLyingSizes(t *testing.T) {
	p, dir := startProviderCatalog(t, "", Options{})
	layer := docsLayer(t, providerdocs.Page{Category: "index", Slug: "index", Title: "Lies", Markdown: strings.Repeat("lies ", 1000)})
	rel := releaseArtifact(t, "1.0.0")
	for ns, size := range map[string]int64{"small": 10, "huge": 1 << 40, "negative": -1} {
		repo := openLayout(t, dir, ns, "hello")
		push(t, repo, rel, "1.0.0")
		lyingReferrer(t, repo, "1.0.0", layer, size)
		d, r := getCatalog[catalog.ProviderPage](t, p, "/catalog/providers/example.com/"+ns+"/hello/1.0.0", nil)
		if r.Status != http.StatusOK || d.Docs.Stored || !strings.HasPrefix(d.Docs.Note, catalog.NoDocs+" that can be read: ") {
			t.Errorf("%s (%d): %d %+v\n%.300s", ns, size, r.Status, d.Docs, r.Body)
		}
	}
}
