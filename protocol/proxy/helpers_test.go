package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// releaseArtifact verifies a fixture release as `oci-tofu push provider`
// does and builds its artifact (index, platform manifests, provenance).
func releaseArtifact(t testing.TB, version string) *oci.Artifact {
	t.Helper()
	return seed.HelloArtifact(t, version)
}

// push writes a at tag, replacing whatever the tag held.
func push(t testing.TB, repo oci.Repository, a *oci.Artifact, tag string) {
	t.Helper()
	seed.Push(t, repo, a, tag)
}

// thirdPartyArtifact assembles a provider the way OpenTofu's docs tell
// third-party tools to (docs/reference.md §1): an index and platform manifests,
// each with one archive/zip layer, and nothing else; written with plain
// image-spec types rather than package oci's builders.
func thirdPartyArtifact(t testing.TB, zips map[names.Platform][]byte) *oci.Artifact {
	t.Helper()
	empty := oci.Blob{Descriptor: ocispec.DescriptorEmptyJSON, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader([]byte("{}"))), nil }}
	a := &oci.Artifact{Blobs: []oci.Blob{empty}}
	idx := map[string]any{
		"schemaVersion": 2, "mediaType": ocispec.MediaTypeImageIndex, "artifactType": "application/vnd.opentofu.provider",
	}
	var manifests []ocispec.Descriptor
	for p, z := range zips {
		layer := ocispec.Descriptor{MediaType: "archive/zip", Digest: digest.FromBytes(z), Size: int64(len(z))}
		a.Blobs = append(a.Blobs, oci.Blob{Descriptor: layer, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(z)), nil }})
		mb, _ := json.Marshal(map[string]any{
			"schemaVersion": 2, "mediaType": ocispec.MediaTypeImageManifest,
			"artifactType": "application/vnd.opentofu.provider-target",
			"config":       ocispec.DescriptorEmptyJSON, "layers": []ocispec.Descriptor{layer},
		})
		md := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: "application/vnd.opentofu.provider-target",
			Digest: digest.FromBytes(mb), Size: int64(len(mb)), Platform: &ocispec.Platform{OS: p.OS, Architecture: p.Arch}}
		a.Manifests = append(a.Manifests, oci.Manifest{Descriptor: md, Bytes: mb})
		manifests = append(manifests, md)
	}
	idx["manifests"] = manifests
	ib, _ := json.Marshal(idx)
	a.Manifests = append(a.Manifests, oci.Manifest{Descriptor: ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.FromBytes(ib), Size: int64(len(ib))}, Bytes: ib})
	return a
}

func fixtureZip(t testing.TB, version, platform string) []byte {
	t.Helper()
	b, err := os.ReadFile(testenv.Testdata(t, "providers", "hello", version, "terraform-provider-hello_"+version+"_"+platform+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// layoutStore is a directory of OCI layouts, one per provider, as
// oci-layout:DIR/${namespace}/${type} names them.
func layoutStore(t testing.TB) (dir string, open func(ns, typ string) oci.Repository) {
	t.Helper()
	dir = t.TempDir()
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return dir, func(ns, typ string) oci.Repository {
		repo, err := client.Open(oci.Reference{Layout: true, Repository: dir + "/" + ns + "/" + typ})
		if err != nil {
			t.Fatal(err)
		}
		return repo
	}
}

// proxy is a Server under test, over TLS (HTTP/2) on loopback.
type proxy struct {
	*Server
	URL    string
	Client *http.Client
	logs   *testenv.LockedBuffer
}

func startProxy(t testing.TB, opts Options) *proxy {
	t.Helper()
	logs := &testenv.LockedBuffer{}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if opts.Client == nil {
		c, err := oci.NewClient(oci.Options{})
		if err != nil {
			t.Fatal(err)
		}
		opts.Client = c
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(s)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(func() {
		ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := s.Close(ctx); err != nil {
			t.Errorf("closing the proxy: %v", err)
		}
	})
	c := ts.Client()
	c.Timeout = 30 * time.Second
	return &proxy{Server: s, URL: ts.URL, Client: c, logs: logs}
}

func mustTemplate(t testing.TB, s string) *repotemplate.Template {
	t.Helper()
	tpl, err := repotemplate.ParseProviderTemplate(s)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// mustMapping maps every provider to the repositories template s names.
func mustMapping(t testing.TB, s string) []store.ProviderMapping {
	t.Helper()
	return mapping(mustTemplate(t, s))
}

// mapping maps every provider to tpl's repositories.
func mapping(tpl *repotemplate.Template) []store.ProviderMapping {
	return []store.ProviderMapping{{Template: tpl, Label: "test"}}
}

type response struct {
	Status int
	Header http.Header
	Body   []byte
	URL    *url.URL
	Err    error // error reading the body (aborted streams)
}

func (p *proxy) do(t testing.TB, method, u string, header map[string]string) response {
	t.Helper()
	if strings.HasPrefix(u, "/") {
		u = p.URL + u
	}
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		// Aborted before the headers: a broken download, as the client sees it.
		return response{Err: err}
	}
	defer resp.Body.Close()
	body, rerr := io.ReadAll(resp.Body)
	return response{Status: resp.StatusCode, Header: resp.Header, Body: body, URL: resp.Request.URL, Err: rerr}
}

func (p *proxy) get(t testing.TB, u string) response { return p.do(t, http.MethodGet, u, nil) }

// getJSON GETs u, requires status want, and decodes the body into v.
func (p *proxy) getJSON(t testing.TB, u string, want int, v any) response {
	t.Helper()
	r := p.get(t, u)
	if r.Status != want {
		t.Fatalf("GET %s: status %d, want %d: %s", u, r.Status, want, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET %s: Content-Type %q", u, ct)
	}
	if v != nil {
		if err := json.Unmarshal(r.Body, v); err != nil {
			t.Fatalf("GET %s: %v: %s", u, err, r.Body)
		}
	}
	return r
}

// wantError requires a JSON {"errors":[…]} answer with status want whose
// message contains substr.
func (p *proxy) wantError(t testing.TB, u string, want int, substr string) {
	t.Helper()
	var e struct{ Errors []string }
	p.getJSON(t, u, want, &e)
	if len(e.Errors) != 1 || !strings.Contains(e.Errors[0], substr) {
		t.Fatalf("GET %s: errors %q, want one mentioning %q", u, e.Errors, substr)
	}
}

// resolve resolves a URL from a document against the document's URL.
func resolve(t testing.TB, base *url.URL, ref string) string {
	t.Helper()
	u, err := url.Parse(ref)
	if err != nil {
		t.Fatal(err)
	}
	return base.ResolveReference(u).String()
}

// faultProxy sits between the proxy and a real registry and misbehaves on
// demand; it counts requests by path.
type faultProxy struct {
	*httptest.Server
	mode   atomic.Value // string: "", "garbage", "slow", "500", "500-attachments", "500-referrers", "503", "401", "corrupt-blob"
	mu     sync.Mutex
	counts map[string]int
}

// referrersTag is the referrers tag schema's tag (sha256-<hex>, no suffix).
var referrersTag = regexp.MustCompile(`/manifests/sha256-[0-9a-f]{64}$`)

func newFaultProxy(t testing.TB, reg *testenv.Registry) *faultProxy {
	t.Helper()
	target, _ := url.Parse("https://" + reg.Host)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{TLSClientConfig: reg.CA.HTTPClient().Transport.(*http.Transport).TLSClientConfig}
	fp := &faultProxy{counts: map[string]int{}}
	fp.mode.Store("")
	fp.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fp.mu.Lock()
		fp.counts[r.Method+" "+r.URL.Path]++
		fp.mu.Unlock()
		switch fp.mode.Load().(string) {
		case "garbage":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte("<html>this is not a registry</html>"))
			return
		case "slow":
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
			return
		case "slow-ish":
			time.Sleep(200 * time.Millisecond)
		case "500":
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		case "500-attachments": // cosign's signature and attestation tags only
			if strings.Contains(r.URL.Path, "/manifests/sha256-") {
				http.Error(w, "boom", http.StatusInternalServerError)
				return
			}
		case "500-referrers": // the referrers API and its tag schema only
			if strings.Contains(r.URL.Path, "/referrers/") || referrersTag.MatchString(r.URL.Path) {
				http.Error(w, "boom", http.StatusInternalServerError)
				return
			}
		case "503":
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		case "401":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`))
			return
		case "corrupt-blob":
			if strings.Contains(r.URL.Path, "/blobs/") && r.Method == http.MethodGet {
				rec := httptest.NewRecorder()
				rp.ServeHTTP(rec, r)
				body := rec.Body.Bytes()
				if len(body) > 0 {
					body[len(body)/2] ^= 0xff
				}
				for k, v := range rec.Header() {
					w.Header()[k] = v
				}
				w.WriteHeader(rec.Code)
				w.Write(body)
				return
			}
		}
		r.Host = target.Host
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(fp.Close)
	return fp
}

func (fp *faultProxy) count(prefix string) int {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	n := 0
	for k, v := range fp.counts {
		if strings.HasPrefix(k, prefix) {
			n += v
		}
	}
	return n
}

func (fp *faultProxy) host() string { return strings.TrimPrefix(fp.URL, "http://") }

// registryRepo opens repository name on a test registry, to push fixtures.
// registryClient is a client trusting the test registry's CA.
func registryClient(t testing.TB, reg *testenv.Registry) *oci.Client {
	t.Helper()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func registryRepo(t testing.TB, reg *testenv.Registry, name string) oci.Repository {
	t.Helper()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Registry: reg.Host, Repository: name})
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// throughFaults are Options reading through fp with every cache off (each
// request goes upstream) and a short upstream timeout; callers add what
// is served. The timeout (2 s) is short of fp's "slow" answer (5 s) and
// long enough for a healthy read on a loaded machine (500 ms was not).
func throughFaults() Options {
	plain, _ := oci.NewClient(oci.Options{PlainHTTP: true, Timeout: 4 * time.Second})
	return Options{Client: plain, Store: store.Options{TagTTL: time.Nanosecond, ResolveTTL: time.Nanosecond, MaxStale: -1, FailureTTL: -1, Timeout: 2 * time.Second}}
}

// upstreamFault is a faultProxy mode and the answer every protocol gives
// for it.
type upstreamFault struct {
	mode   string
	status int
	msg    string
}

var upstreamFaults = []upstreamFault{
	{"garbage", http.StatusBadGateway, "bad answer from the OCI registry"},
	{"slow", http.StatusGatewayTimeout, "did not answer in time"},
	{"401", http.StatusBadGateway, "denied the proxy access"},
}
