//go:build walk

package proxy

// The walks of docs/architecture.md ("The path of a request"): each test
// sets up a server and, with WALK=1, makes the request walked, so that tools/walk can count the files and functions
// the request alone enters (the coverage blocks it adds). Built only with
// -tags walk: without coverage they measure nothing.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// walking reports whether this run makes the request walked.
func walking() bool { return os.Getenv("WALK") == "1" }

// TestWalkHeldVersion: a held <version>.json, one mapping, no policy.
func TestWalkHeldVersion(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")})
	p.get(t, "/v1/mirror/example.com/test/hello/index.json") // connections, caches of the tag list warm as a client would have them
	if walking() {
		p.get(t, "/v1/mirror/example.com/test/hello/1.0.0.json")
	}
}

// TestWalkModuleDownload: a module download and the archive it names.
func TestWalkModuleDownload(t *testing.T) {
	mdir, mopen := moduleStore(t)
	push(t, mopen("acme", "network", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), names.TagForVersion(mustVersion(t, "1.0.0")))
	p := startProxy(t, Options{ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")}})
	p.get(t, "/v1/modules/acme/network/aws/versions")
	if walking() {
		u := p.moduleDownload(t, "/v1/modules/acme/network/aws/1.0.0/download", nil)
		p.get(t, u)
	}
}

// TestWalkScopedVersion: <version>.json for a client whose token the
// policy file scopes, a rule of that file judging the version; the
// client asked for index.json before, as tofu does, so the version is
// read and judged for the first time.
func TestWalkScopedVersion(t *testing.T) {
	p, as := scopedProxy(t, Options{})
	wantStatus(t, p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/index.json", as), 200)
	if walking() {
		wantStatus(t, p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/1.0.0.json", as), 200)
	}
}

// TestWalkWarmScopedVersion: the same <version>.json asked again, as
// the next run of tofu asks it: the document cache answers.
func TestWalkWarmScopedVersion(t *testing.T) {
	p, as := scopedProxy(t, Options{})
	wantStatus(t, p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/index.json", as), 200)
	wantStatus(t, p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/1.0.0.json", as), 200)
	if walking() {
		wantStatus(t, p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/1.0.0.json", as), 200)
	}
}

// TestWalkColdScopedVersion: the same <version>.json on a proxy that has
// served nothing yet.
func TestWalkColdScopedVersion(t *testing.T) {
	p, as := scopedProxy(t, Options{})
	if walking() {
		wantStatus(t, p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/1.0.0.json", as), 200)
	}
}

// TestWalkAuditedArchive: the archive a scoped client's <version>.json
// names, fetched by its signed URL (without the token, as tofu does),
// the audit trail on.
func TestWalkAuditedArchive(t *testing.T) {
	trail, _ := openTrail(t)
	p, as := scopedProxy(t, Options{Audit: trail})
	wantStatus(t, p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/index.json", as), 200)
	r := p.do(t, http.MethodGet, "/v1/mirror/example.com/team-a/hello/1.0.0.json", as)
	wantStatus(t, r, 200)
	var doc networkMirrorVersion
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatal(err)
	}
	archive := resolve(t, r.URL, doc.Archives["linux_amd64"].URL)
	if walking() {
		wantStatus(t, p.get(t, archive), 200)
	}
}

// TestWalkScopedModuleDownload: a module download and the archive it
// names, for a client whose token the policy file scopes.
func TestWalkScopedModuleDownload(t *testing.T) {
	p, as := scopedProxy(t, Options{})
	wantStatus(t, p.do(t, http.MethodGet, "/v1/modules/team-a/net/aws/versions", as), 200)
	if walking() {
		u := p.moduleDownload(t, "/v1/modules/team-a/net/aws/1.0.0/download", as)
		wantStatus(t, p.get(t, u), 200)
	}
}

// scopedProxy serves a provider and a module of team-a, with opts, under
// a policy file naming client team-a (its token, its scope) and a rule
// for the provider; as is team-a's Authorization header.
func scopedProxy(t *testing.T, opts Options) (p *proxy, as map[string]string) {
	dir, open := layoutStore(t)
	push(t, open("team-a", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	mdir, mopen := moduleStore(t)
	push(t, mopen("team-a", "net", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), names.TagForVersion(mustVersion(t, "1.0.0")))
	const token = "token-of-team-a"
	opts.ProviderMappings = mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")
	opts.ModuleMappings = []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")}
	opts.RegistryHostname = "example.com"
	opts.Policy = mustPolicy(t, fmt.Sprintf(`
client "team-a" {
  tokens    = [%q]
  providers = ["example.com/team-a/*"]
  modules   = ["*/team-a/*/*"]
}
provider "example.com/team-a/*" {
  name     = "team-a-stable"
  versions = ">= 1.0"
}
`, policy.TokenHash(token)))
	return startProxy(t, opts), map[string]string{"Authorization": "Bearer " + token}
}

// wantStatus fails the walk unless r has status want: a walk measures the
// request served, not an error's path.
func wantStatus(t *testing.T, r response, want int) {
	t.Helper()
	if r.Status != want {
		t.Fatalf("%s: %d %s, want %d", r.URL, r.Status, r.Body, want)
	}
}
