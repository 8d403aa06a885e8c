package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/providerdocs"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// pushedDigest is the digest push provider --json reports.
func pushedDigest(t *testing.T, out string) (digest string, upToDate bool) {
	t.Helper()
	var res struct {
		Digest   string `json:"digest"`
		UpToDate bool   `json:"up_to_date"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Digest == "" {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	return res.Digest, res.UpToDate
}

// push provider --docs with the built binary into a real registry: the
// index is the one a push without --docs makes (tofu installs it through
// the proxy as before), `oras discover` finds one documentation referrer
// of it, an up-to-date push with the same tree writes no other, another
// tree is refused without --replace, and the proxy's catalogue lists and
// shows the pages.
func TestPushProviderDocs(t *testing.T) {
	reg := testenv.StartRegistry(t)
	key := testenv.Testdata(t, "keys", "gpg-signer.asc")
	release := testenv.Testdata(t, "providers", "hello", "1.0.0")
	docs := testenv.Testdata(t, "providerdocs", "hello")
	repo := reg.Host + "/providers/test/hello"

	plain, _ := pushedDigest(t, mustRun(t, "push", "provider", "--json", "--key", key, release, reg.Host+"/plain/test/hello"))
	out := mustRun(t, "push", "provider", "--key", key, "--docs", docs, release, repo)
	if !strings.Contains(out, "stored its documentation (4 pages) as referrer sha256:") {
		t.Fatalf("push --docs said:\n%s", out)
	}
	reported := mustRun(t, "push", "provider", "--json", "--key", key, "--docs", docs, release, repo)
	documented, upToDate := pushedDigest(t, reported)
	if documented != plain || !upToDate {
		t.Fatalf("index %s with --docs (up to date %v), %s without", documented, upToDate, plain)
	}
	var rep struct {
		Docs struct {
			Referrer string `json:"referrer"`
			Pages    int    `json:"pages"`
			Written  *bool  `json:"written"`
		} `json:"docs"`
	}
	if err := json.Unmarshal([]byte(reported), &rep); err != nil || !strings.HasPrefix(rep.Docs.Referrer, "sha256:") || rep.Docs.Pages != 4 || rep.Docs.Written == nil || *rep.Docs.Written {
		t.Errorf("--json's docs of an up-to-date push: %+v %v\n%s", rep.Docs, err, reported)
	}
	again := mustRun(t, "push", "provider", "--key", key, "--docs", docs, release, repo)
	if !strings.Contains(again, "up to date") || !strings.Contains(again, "its documentation is stored already (4 pages") {
		t.Errorf("an up-to-date push:\n%s", again)
	}

	tls := []string{"--plain-http=false", "--ca-file", reg.CA.CertFile}
	discovered := mustOras(t, append([]string{"discover", "--format", "json", "--artifact-type", providerdocs.ArtifactType}, append(tls, repo+":1.0.0")...)...)
	var found struct {
		Referrers []struct{ ArtifactType, Digest string } `json:"referrers"`
	}
	if err := json.Unmarshal([]byte(discovered), &found); err != nil || len(found.Referrers) != 1 || found.Referrers[0].ArtifactType != providerdocs.ArtifactType {
		t.Fatalf("oras discover: %v\n%s", err, discovered)
	}
	if found.Referrers[0].Digest != rep.Docs.Referrer {
		t.Errorf("--json reports the referrer %s, oras discovers %s", rep.Docs.Referrer, found.Referrers[0].Digest)
	}

	other := t.TempDir()
	if err := os.CopyFS(other, os.DirFS(docs)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "resources", "greeting.md"), []byte("# hello_greeting\n\nRewritten.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused, err := run(t, "push", "provider", "--key", key, "--docs", other, release, repo)
	if err == nil || !strings.Contains(refused, "other documentation is stored for this release") || !strings.Contains(refused, "--replace") {
		t.Errorf("other documentation without --replace: %v\n%s", err, refused)
	}

	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}")
	const page = "/catalog/providers/localhost/test/hello/1.0.0"
	code, body := s.get(t, page+"?format=json")
	var d catalog.ProviderPage
	if code != 200 || json.Unmarshal(body, &d) != nil || !d.Docs.Stored || d.Docs.Referrer != found.Referrers[0].Digest {
		t.Fatalf("%s: %d %s", page, code, body)
	}
	var titles []string
	var thing string
	for _, c := range d.Docs.Categories {
		for _, p := range c.Pages {
			titles = append(titles, c.Title+": "+p.Title)
			if c.Category == "resources" {
				u, _ := url.Parse(s.URL + page)
				ref, _ := u.Parse(p.URL)
				thing = ref.Path
			}
		}
	}
	if want := "Overview: Provider: Hello, Guides: Getting started, Resources: hello_greeting Resource - hello, Data sources: hello_greeting Data Source - hello"; strings.Join(titles, ", ") != want {
		t.Errorf("pages %q, want %q", strings.Join(titles, ", "), want)
	}
	code, body = s.get(t, thing)
	if code != 200 || !strings.Contains(string(body), `<h1 id="readme-hello-greeting-resource">hello_greeting (Resource)</h1>`) ||
		!strings.Contains(string(body), `/docs/data-sources/greeting">data source</a>`) {
		t.Errorf("%s: %d\n%s", thing, code, body)
	}

	cli := testenv.Tofu(t, "")
	addr := s.Host + "/test/hello"
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": strings.Replace(fmt.Sprintf(helloConfig, "1.0.0"), "example.com/test/hello", addr, 1)})
	if out := cli.Run(t, dir, "init", "-input=false", "-no-color"); !strings.Contains(out, "Installed "+addr+" v1.0.0") {
		t.Fatalf("tofu init through the proxy:\n%s", out)
	}
}

// Into an OCI layout push provider --docs stores no documentation, and
// says so: a referrer in index.json makes `crane push DIR` refuse the
// layout ("layout contains 2 entries, consider --index"; with --index
// the tag would name a wrapping index, not the provider's). The tree is
// still read, and a bad one refused.
func TestPushProviderDocsIntoLayout(t *testing.T) {
	reg := testenv.StartRegistry(t)
	key := testenv.Testdata(t, "keys", "gpg-signer.asc")
	release := testenv.Testdata(t, "providers", "hello", "1.0.0")
	layout := t.TempDir()
	out := mustRun(t, "push", "provider", "--key", key, "--no-sbom", "--docs", testenv.Testdata(t, "providerdocs", "hello"), release, "oci-layout:"+layout)
	if !strings.Contains(out, "no documentation in an OCI layout") {
		t.Errorf("push into a layout said:\n%s", out)
	}
	crane := testenv.Tool(t, "crane")
	env := []string{"SSL_CERT_FILE=" + reg.CA.CertFile}
	if out, err := testenv.Run(t, "", env, crane, "push", layout, reg.Host+"/crane/test/hello:1.0.0"); err != nil {
		t.Fatalf("crane push of the layout: %v\n%s", err, out)
	}
	bad := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bad, "resources"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(bad, "resources", "leak.md")); err != nil {
		t.Fatal(err)
	}
	refused, err := run(t, "push", "provider", "--key", key, "--docs", bad, release, "oci-layout:"+t.TempDir())
	if err == nil || !strings.Contains(refused, "symbolic link that does not lead to a file inside") || !strings.Contains(refused, "reading the documentation: ") {
		t.Errorf("a link out of the tree: %v\n%s", err, refused)
	}
}
