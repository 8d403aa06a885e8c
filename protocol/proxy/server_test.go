package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

type networkMirrorVersion struct {
	Archives map[string]struct {
		URL    string   `json:"url"`
		Hashes []string `json:"hashes"`
	} `json:"archives"`
}

type downloadDoc struct {
	Protocols           []string `json:"protocols"`
	OS, Arch, Filename  string
	DownloadURL         string `json:"download_url"`
	SHASumsURL          string `json:"shasums_url"`
	SHASumsSignatureURL string `json:"shasums_signature_url"`
	SHASum              string `json:"shasum"`
	SigningKeys         struct {
		GPGPublicKeys []struct {
			KeyID      string `json:"key_id"`
			ASCIIArmor string `json:"ascii_armor"`
		} `json:"gpg_public_keys"`
	} `json:"signing_keys"`
}

type versionsDoc struct {
	Versions []struct {
		Version   string
		Protocols []string
		Platforms []struct{ OS, Arch string }
	}
	Warnings []string
}

// Signed releases pushed as `oci-tofu push provider` pushes them, served
// from an OCI layout: every document and file a client reads.
func TestServeSignedReleasesFromLayout(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	push(t, repo, releaseArtifact(t, "2.0.0-rc1"), "2.0.0-rc1")
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")})

	var disco map[string]string
	p.getJSON(t, "/.well-known/terraform.json", 200, &disco)
	if disco["providers.v1"] != "/v1/providers/" {
		t.Fatalf("discovery: %v", disco)
	}

	var idx struct{ Versions map[string]map[string]any }
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &idx)
	if len(idx.Versions) != 2 || idx.Versions["1.0.0"] == nil || idx.Versions["2.0.0-rc1"] == nil {
		t.Fatalf("index.json: %+v", idx)
	}

	var mv networkMirrorVersion
	r := p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &mv)
	if len(mv.Archives) != 4 {
		t.Fatalf("archives: %+v", mv.Archives)
	}
	prov := readLayoutProvenance(t, repo, "1.0.0")
	for _, plat := range []string{"linux_amd64", "linux_arm64", "darwin_arm64", "windows_amd64"} {
		a := mv.Archives[plat]
		zip := fixtureZip(t, "1.0.0", plat)
		want := []string{prov.Platforms[plat].H1, "zh:" + sha256Hex(zip)}
		if !slices.Equal(a.Hashes, want) || !strings.HasPrefix(want[0], "h1:") {
			t.Errorf("%s hashes %v, want %v", plat, a.Hashes, want)
		}
		u := resolve(t, r.URL, a.URL)
		if !strings.HasPrefix(u, p.URL+"/v1/archives/example.com/test/hello/1.0.0/") || !strings.HasSuffix(u, "terraform-provider-hello_1.0.0_"+plat+".zip") {
			t.Errorf("archive URL %s", u)
		}
		head := p.do(t, http.MethodHead, u, nil)
		if head.Status != 200 || head.Header.Get("Content-Length") != fmt.Sprint(len(zip)) || len(head.Body) != 0 {
			t.Errorf("HEAD %s: %d %v", u, head.Status, head.Header)
		}
		got := p.get(t, u)
		if got.Status != 200 || got.Err != nil || !bytes.Equal(got.Body, zip) || got.Header.Get("Content-Type") != "application/zip" {
			t.Errorf("GET %s: %d %v, %d bytes", u, got.Status, got.Err, len(got.Body))
		}
	}

	var vd versionsDoc
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, &vd)
	if len(vd.Versions) != 2 || len(vd.Warnings) != 0 {
		t.Fatalf("versions: %+v", vd)
	}
	for _, v := range vd.Versions {
		if len(v.Protocols) == 0 || v.Protocols[0] != "6.0" || len(v.Platforms) == 0 {
			t.Errorf("version %+v", v)
		}
	}

	for version, key := range map[string]string{"1.0.0": "gpg-signer.asc", "2.0.0-rc1": "gocrypto-signer.asc"} {
		var d downloadDoc
		r := p.getJSON(t, "/v1/providers/test/hello/"+version+"/download/linux/amd64", 200, &d)
		zip := fixtureZip(t, version, "linux_amd64")
		if d.OS != "linux" || d.Arch != "amd64" || d.SHASum != sha256Hex(zip) || d.Filename != "terraform-provider-hello_"+version+"_linux_amd64.zip" {
			t.Errorf("download doc %+v", d)
		}
		sums := p.get(t, resolve(t, r.URL, d.SHASumsURL))
		origSums, _ := os.ReadFile(testenv.Testdata(t, "providers", "hello", version, "terraform-provider-hello_"+version+"_SHA256SUMS"))
		if sums.Status != 200 || !bytes.Equal(sums.Body, origSums) {
			t.Errorf("%s SHA256SUMS differs from the original: %d %q", version, sums.Status, sums.Body)
		}
		sig := p.get(t, resolve(t, r.URL, d.SHASumsSignatureURL))
		origSig, _ := os.ReadFile(testenv.Testdata(t, "providers", "hello", version, "terraform-provider-hello_"+version+"_SHA256SUMS.sig"))
		binSig, _ := pgp.DearmorSignature(origSig)
		if sig.Status != 200 || !bytes.Equal(sig.Body, binSig) {
			t.Errorf("%s signature differs from the original", version)
		}
		if len(d.SigningKeys.GPGPublicKeys) != 1 {
			t.Fatalf("keys: %+v", d.SigningKeys)
		}
		k := d.SigningKeys.GPGPublicKeys[0]
		kr, err := pgp.ReadKeyring("served", []byte(k.ASCIIArmor))
		if err != nil {
			t.Fatal(err)
		}
		v, err := pgp.VerifyDetached(sums.Body, sig.Body, []*pgp.Keyring{kr})
		if err != nil || v.KeyID != k.KeyID {
			t.Errorf("%s: served signature does not verify with served key %s: %v", version, k.KeyID, err)
		}
		want, _ := pgp.LoadKeyring(testenv.Testdata(t, "keys", key))
		if _, err := pgp.VerifyDetached(sums.Body, sig.Body, []*pgp.Keyring{want}); err != nil {
			t.Errorf("%s: not signed by the publisher's key %s: %v", version, key, err)
		}
		dl := p.get(t, resolve(t, r.URL, d.DownloadURL))
		if !bytes.Equal(dl.Body, zip) {
			t.Errorf("%s: download differs", version)
		}
	}
}

func readLayoutProvenance(t *testing.T, repo oci.Repository, version string) *oci.Provenance {
	t.Helper()
	v, _ := names.ParseVersion(version)
	pv, err := oci.ResolveProvider(context.Background(), repo, v)
	if err != nil || pv.Provenance == nil {
		t.Fatalf("%v %+v", err, pv)
	}
	prov, _, err := oci.ReadProvenance(context.Background(), repo, *pv.Provenance)
	if err != nil {
		t.Fatal(err)
	}
	return prov
}

// A provider assembled by a third-party tool (index and platform manifests
// only): the mirror serves it with zh hashes; the registry protocol leaves
// it out and explains why, until an operator signing key signs a SHA256SUMS
// generated from the OCI digests.
func TestServeThirdPartyArtifact(t *testing.T) {
	dir, open := layoutStore(t)
	zips := map[names.Platform][]byte{
		{OS: "linux", Arch: "amd64"}:  fixtureZip(t, "1.1.0", "linux_amd64"),
		{OS: "darwin", Arch: "arm64"}: fixtureZip(t, "1.1.0", "darwin_arm64"),
	}
	push(t, open("third", "hello"), thirdPartyArtifact(t, zips), "1.1.0")
	tpl := mustTemplate(t, "oci-layout:"+dir+"/${namespace}/${type}")
	p := startProxy(t, Options{ProviderMappings: mapping(tpl)})

	var mv networkMirrorVersion
	r := p.getJSON(t, "/v1/mirror/registry.opentofu.org/third/hello/1.1.0.json", 200, &mv)
	for plat, z := range map[string][]byte{"linux_amd64": zips[names.Platform{OS: "linux", Arch: "amd64"}], "darwin_arm64": zips[names.Platform{OS: "darwin", Arch: "arm64"}]} {
		a := mv.Archives[plat]
		if !slices.Equal(a.Hashes, []string{"zh:" + sha256Hex(z)}) {
			t.Errorf("%s hashes %v", plat, a.Hashes)
		}
		if got := p.get(t, resolve(t, r.URL, a.URL)); !bytes.Equal(got.Body, z) {
			t.Errorf("%s: archive differs", plat)
		}
	}

	// Nothing the registry protocol can offer: the versions, with a
	// warning naming the reason (clients print warnings, not 404 bodies),
	// and a download that answers 409.
	var vd versionsDoc
	p.getJSON(t, "/v1/providers/third/hello/versions", 200, &vd)
	if len(vd.Versions) != 1 || len(vd.Warnings) != 1 || !strings.Contains(vd.Warnings[0], "no publisher signature") {
		t.Errorf("versions without a signing key: %+v", vd)
	}
	vd = versionsDoc{}
	p.wantError(t, "/v1/providers/third/hello/1.1.0/download/linux/amd64", http.StatusConflict, "network mirror protocol only")

	signer, err := pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	ps := startProxy(t, Options{ProviderMappings: mapping(tpl), Signer: signer})
	ps.getJSON(t, "/v1/providers/third/hello/versions", 200, &vd)
	if len(vd.Versions) != 1 || vd.Versions[0].Version != "1.1.0" || !slices.Equal(vd.Versions[0].Protocols, []string{"5.0"}) || len(vd.Versions[0].Platforms) != 2 {
		t.Fatalf("versions with a signing key: %+v", vd)
	}
	var d downloadDoc
	r = ps.getJSON(t, "/v1/providers/third/hello/1.1.0/download/darwin/arm64", 200, &d)
	sums := ps.get(t, resolve(t, r.URL, d.SHASumsURL))
	parsed, err := sha256sums.Parse(sums.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := sha256sums.Sums{
		"terraform-provider-hello_1.1.0_linux_amd64.zip":  sha256Hex(zips[names.Platform{OS: "linux", Arch: "amd64"}]),
		"terraform-provider-hello_1.1.0_darwin_arm64.zip": sha256Hex(zips[names.Platform{OS: "darwin", Arch: "arm64"}]),
	}
	if !bytes.Equal(parsed.Bytes(), want.Bytes()) || d.Filename != "terraform-provider-hello_1.1.0_darwin_arm64.zip" || d.SHASum != want[d.Filename] {
		t.Fatalf("generated SHA256SUMS %q / doc %+v", sums.Body, d)
	}
	sig := ps.get(t, resolve(t, r.URL, d.SHASumsSignatureURL))
	pub, _ := pgp.LoadKeyring(testenv.Testdata(t, "keys", "gocrypto-signer.asc"))
	if v, err := pgp.VerifyDetached(sums.Body, sig.Body, []*pgp.Keyring{pub}); err != nil || v.KeyID != d.SigningKeys.GPGPublicKeys[0].KeyID {
		t.Fatalf("generated signature: %v", err)
	}
}

// Unknown providers, versions and platforms are 404 with a JSON error.
func TestNotFound(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	tpl := mustTemplate(t, "oci-layout:"+dir+"/${namespace}/${type}")
	p := startProxy(t, Options{ProviderMappings: []store.ProviderMapping{{Template: tpl, Exclude: []string{"*/secret/*"}}}})
	for _, c := range []struct{ path, msg string }{
		{"/v1/mirror/example.com/test/nope/index.json", "unknown provider"},
		{"/v1/mirror/example.com/nope/hello/1.0.0.json", "unknown provider"},
		{"/v1/mirror/example.com/test/hello/9.9.9.json", "no version 9.9.9"},
		{"/v1/mirror/example.com/secret/hello/index.json", "not served by this proxy"},
		{"/v1/providers/test/nope/versions", "unknown provider"},
		{"/v1/providers/test/hello/9.9.9/download/linux/amd64", "no version 9.9.9"},
		{"/v1/providers/test/hello/1.0.0/download/plan9/amd64", "no package for plan9_amd64"},
		{"/v1/archives/example.com/test/hello/1.0.0/" + strings.Repeat("a", 64) + "/terraform-provider-hello_1.0.0_linux_amd64.zip", "no release with index"},
		{"/v1/nothing-here", ""},
	} {
		if c.msg == "" {
			if r := p.get(t, c.path); r.Status != 404 {
				t.Errorf("%s: %d", c.path, r.Status)
			}
			continue
		}
		p.wantError(t, c.path, http.StatusNotFound, c.msg)
	}
}

// Malformed paths are refused with 400 before anything is looked up.
func TestBadPaths(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")})
	hex := strings.Repeat("a", 64)
	for _, path := range []string{
		"/v1/mirror/example.com/test/../hello/index.json",
		"/v1/mirror/example.com/test/%2e%2e/index.json",
		"/v1/mirror/example.com/test%2Fx/hello/index.json",
		"/v1/mirror/example.com/test/hello%5Cx/index.json",
		"/v1/mirror/example.com//hello/index.json",
		"/v1/mirror/example.com/test/hello/v1.0.0.json",
		"/v1/mirror/example.com/test/hello/1.0.json",
		"/v1/mirror/example.com/test/hello/1.0.0",
		"/v1/mirror/example.com/test/hello/1.0.0.json/extra",
		"/v1/mirror/exa_mple.com/test/hello/index.json",
		"/v1/mirror/example.com/te%00st/hello/index.json",
		"/v1/mirror/example.com/-test/hello/index.json",
		"/v1/providers/test/hello/1.0.0/download/Linux/amd64",
		"/v1/providers/test/hello/1.0.0/download/linux/amd_64",
		"/v1/providers/test/hello/1.0.0/download/linux",
		"/v1/providers/test/hello/latest/download/linux/amd64",
		"/v1/providers/test/hello/version",
		"/v1/providers/test/hello/1.0.0/upload/linux/amd64",
		"/v1/archives/example.com/test/hello/1.0.0/" + hex + "/terraform-provider-other_1.0.0_linux_amd64.zip",
		"/v1/archives/example.com/test/hello/1.0.0/" + hex + "/terraform-provider-hello_1.0.1_linux_amd64.zip",
		"/v1/archives/example.com/test/hello/1.0.0/" + hex[:63] + "/terraform-provider-hello_1.0.0_linux_amd64.zip",
		"/v1/archives/example.com/test/hello/1.0.0/" + strings.ToUpper(hex) + "/terraform-provider-hello_1.0.0_linux_amd64.zip",
		"/v1/archives/example.com/test/hello/1.0.0/" + hex + "/..%2F..%2Fetc%2Fpasswd",
		"/v1/mirror/" + strings.Repeat("a", 2000) + "/test/hello/index.json",
	} {
		r := p.get(t, path)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), `"errors"`) {
			t.Errorf("%s: status %d %s, want 400", path, r.Status, r.Body)
		}
	}
	if r := p.do(t, http.MethodPost, "/v1/mirror/example.com/test/hello/index.json", nil); r.Status != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", r.Status)
	}
}

// Registry failures are 5xx with a clear message: never 200 with wrong
// data and never 404.
func TestUpstreamFailures(t *testing.T) {
	reg := testenv.StartRegistry(t)
	push(t, registryRepo(t, reg, "providers/test/hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	fp := newFaultProxy(t, reg)
	opts := throughFaults()
	opts.ProviderMappings = mustMapping(t, fp.host()+"/providers/${namespace}/${type}")
	p := startProxy(t, opts)
	index := "/v1/mirror/example.com/test/hello/index.json"
	version := "/v1/mirror/example.com/test/hello/1.0.0.json"
	registry := "/v1/providers/test/hello/versions"
	var idx struct{ Versions map[string]any }
	p.getJSON(t, index, 200, &idx)
	if len(idx.Versions) != 1 {
		t.Fatalf("%+v", idx)
	}
	// oras retries 5xx answers with backoff; within the short upstream
	// timeout here they end as 504, with a longer one as 502/503
	// (TestUpstreamErrorMapping).
	for _, c := range append(slices.Clone(upstreamFaults), upstreamFault{"500", 0, ""}, upstreamFault{"503", 0, ""}) {
		fp.mode.Store(c.mode)
		for _, path := range []string{index, version, registry} {
			if c.status != 0 {
				p.wantError(t, path, c.status, c.msg)
				continue
			}
			r := p.get(t, path)
			if r.Status < 502 || r.Status > 504 || !strings.Contains(string(r.Body), "OCI registry") {
				t.Errorf("%s with upstream %s: %d %s", path, c.mode, r.Status, r.Body)
			}
		}
	}
	fp.mode.Store("")
	p.getJSON(t, version, 200, nil)

	// Registry down: connection refused.
	down := startProxy(t, Options{Client: opts.Client, ProviderMappings: mustMapping(t, "127.0.0.1:1/providers/${namespace}/${type}")})
	down.wantError(t, index, http.StatusBadGateway, "unreachable")
	down.wantError(t, registry, http.StatusBadGateway, "unreachable")
	if !strings.Contains(down.logs.String(), "connection refused") {
		t.Errorf("the log lacks the upstream detail:\n%s", down.logs.String())
	}
}

// A blob whose bytes do not match its digest is never delivered whole:
// the stream is aborted, the client sees a broken download.
func TestDigestMismatchAbortsStream(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")})
	zip := fixtureZip(t, "1.0.0", "linux_amd64")
	blob := filepath.Join(dir, "test", "hello", "blobs", "sha256", sha256Hex(zip))

	var mv networkMirrorVersion
	r := p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &mv)
	u := resolve(t, r.URL, mv.Archives["linux_amd64"].URL)
	for _, c := range []struct {
		name   string
		mutate func([]byte) []byte
	}{
		{"flipped byte", func(b []byte) []byte { b = slices.Clone(b); b[len(b)-1] ^= 1; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)-10] }},
		{"extended", func(b []byte) []byte { return append(slices.Clone(b), 'x') }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := os.WriteFile(blob, c.mutate(zip), 0o644); err != nil {
				t.Fatal(err)
			}
			got := p.get(t, u)
			if got.Err == nil {
				t.Fatalf("download completed (%d, %d bytes) from a corrupt blob", got.Status, len(got.Body))
			}
			if bytes.Equal(got.Body, zip) || len(got.Body) >= len(zip) {
				t.Fatalf("client received %d of %d bytes", len(got.Body), len(zip))
			}
			// HTTP/1.1 as well as HTTP/2.
			if n, err := downloadHTTP1(t, p, u); err == nil || n >= len(zip) {
				t.Fatalf("HTTP/1.1 download completed: %v, %d bytes", err, n)
			}
		})
	}
	if err := os.WriteFile(blob, zip, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := p.get(t, u); got.Err != nil || !bytes.Equal(got.Body, zip) {
		t.Fatalf("after repair: %v", got.Err)
	}
	if !strings.Contains(p.logs.String(), "digest_mismatch") || !strings.Contains(p.logs.String(), "size_mismatch") {
		t.Errorf("aborts not logged:\n%s", p.logs.String())
	}
}

// downloadHTTP1 downloads u over HTTP/1.1 and returns the bytes received
// and the error that ended the download, if any.
func downloadHTTP1(t *testing.T, p *proxy, u string) (int, error) {
	t.Helper()
	cfg := p.Client.Transport.(*http.Transport).TLSClientConfig.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	c1 := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
	defer c1.CloseIdleConnections()
	resp, err := c1.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return len(b), err
}

// A large blob corrupted in the middle: the headers and most bytes are
// already out when the digest fails; the client must still see a broken
// download, on HTTP/2 and HTTP/1.1.
func TestLargeCorruptBlobAbortsMidStream(t *testing.T) {
	dir, open := layoutStore(t)
	big := make([]byte, 3<<20+12345)
	rand.Read(big)
	push(t, open("big", "blob"), thirdPartyArtifact(t, map[names.Platform][]byte{{OS: "linux", Arch: "amd64"}: big}), "1.0.0")
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")})
	var mv networkMirrorVersion
	r := p.getJSON(t, "/v1/mirror/example.com/big/blob/1.0.0.json", 200, &mv)
	u := resolve(t, r.URL, mv.Archives["linux_amd64"].URL)
	if got := p.get(t, u); got.Err != nil || !bytes.Equal(got.Body, big) {
		t.Fatalf("clean download: %v, %d bytes", got.Err, len(got.Body))
	}
	blob := filepath.Join(dir, "big", "blob", "blobs", "sha256", sha256Hex(big))
	bad := slices.Clone(big)
	bad[len(bad)/2] ^= 0x55
	if err := os.WriteFile(blob, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	got := p.get(t, u)
	if got.Err == nil || len(got.Body) >= len(big) {
		t.Fatalf("HTTP/2: corrupt blob delivered: status %d, %d bytes, err %v", got.Status, len(got.Body), got.Err)
	}
	if got.Status != 200 || len(got.Body) < 1<<20 {
		t.Logf("aborted after %d bytes (status %d)", len(got.Body), got.Status)
	}
	if n, err := downloadHTTP1(t, p, u); err == nil || n >= len(big) {
		t.Fatalf("HTTP/1.1: corrupt blob delivered: %d bytes, err %v", n, err)
	}
	var metrics = string(p.get(t, "/metrics").Body)
	if !strings.Contains(metrics, `oci_tofu_proxy_stream_aborts_total{reason="digest_mismatch"} 2`) {
		t.Errorf("abort metric missing")
	}
}

// The same through a registry that corrupts blobs in flight.
func TestCorruptBlobFromRegistryAborts(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := registryRepo(t, reg, "p/test/hello")
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	fp := newFaultProxy(t, reg)
	plain, _ := oci.NewClient(oci.Options{PlainHTTP: true})
	p := startProxy(t, Options{Client: plain, ProviderMappings: mustMapping(t, fp.host()+"/p/${namespace}/${type}")})
	var mv networkMirrorVersion
	r := p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &mv)
	u := resolve(t, r.URL, mv.Archives["linux_amd64"].URL)
	zip := fixtureZip(t, "1.0.0", "linux_amd64")
	if got := p.get(t, u); got.Err != nil || !bytes.Equal(got.Body, zip) {
		t.Fatalf("clean download: %v", got.Err)
	}
	fp.mode.Store("corrupt-blob")
	if got := p.get(t, u); got.Err == nil || len(got.Body) >= len(zip) {
		t.Fatalf("corrupt blob delivered: %d bytes, err %v", len(got.Body), got.Err)
	}
}

// Concurrent identical requests cause one upstream request; warm requests
// none until the tag TTL passes.
func TestCachesCollapseUpstreamRequests(t *testing.T) {
	reg := testenv.StartRegistry(t)
	repo := registryRepo(t, reg, "p/test/hello")
	push(t, repo, releaseArtifact(t, "1.0.0"), "1.0.0")
	fp := newFaultProxy(t, reg)
	plain, _ := oci.NewClient(oci.Options{PlainHTTP: true})
	p := startProxy(t, Options{Client: plain, ProviderMappings: mustMapping(t, fp.host()+"/p/${namespace}/${type}"), Store: store.Options{TagTTL: time.Hour}})
	fp.mode.Store("slow-ish")
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, nil)
		}()
	}
	wg.Wait()
	for i := 0; i < 10; i++ {
		p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, nil)
		p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, nil)
	}
	// One read of the index by its tag (one round trip), four platform
	// manifests, one provenance manifest; one tag listing.
	if n := fp.count("HEAD /v2/p/test/hello/manifests/1.0.0") + fp.count("GET /v2/p/test/hello/manifests/1.0.0"); n != 1 {
		t.Errorf("tag resolved %d times upstream: %v", n, fp.counts)
	}
	if n := fp.count("GET /v2/p/test/hello/tags/list"); n != 1 {
		t.Errorf("tags listed %d times upstream", n)
	}
	if n := fp.count("GET /v2/p/test/hello/manifests/sha256:"); n != 5 {
		t.Errorf("%d manifest fetches by digest, want 5: %v", n, fp.counts)
	}
	metrics := p.get(t, "/metrics")
	for _, want := range []string{`oci_tofu_proxy_cache_requests_total{cache="documents",result="hit"}`, `oci_tofu_proxy_requests_total{class="2xx",handler="mirror",method="GET"} 52`} {
		if !strings.Contains(string(metrics.Body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// With client authentication, metadata needs a bearer token, and archive
// URLs are signed and expire.
func TestClientAuthentication(t *testing.T) {
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	token := "s3cret-token-0123456789"
	p := startProxy(t, Options{
		ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"),
		AuthTokens:       []string{token},
		ArchiveURLTTL:    time.Minute,
	})
	path := "/v1/mirror/example.com/test/hello/1.0.0.json"
	if r := p.get(t, path); r.Status != http.StatusUnauthorized {
		t.Fatalf("no token: %d", r.Status)
	}
	if r := p.do(t, "GET", path, map[string]string{"Authorization": "Bearer wrong"}); r.Status != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", r.Status)
	}
	if r := p.get(t, "/v1/providers/test/hello/versions"); r.Status != http.StatusUnauthorized {
		t.Fatalf("registry without token: %d", r.Status)
	}
	r := p.do(t, "GET", path, map[string]string{"Authorization": "Bearer " + token})
	if r.Status != 200 {
		t.Fatalf("with token: %d %s", r.Status, r.Body)
	}
	var mv networkMirrorVersion
	json.Unmarshal(r.Body, &mv)
	u := resolve(t, r.URL, mv.Archives["linux_amd64"].URL)
	if got := p.get(t, u); got.Status != 200 || !bytes.Equal(got.Body, fixtureZip(t, "1.0.0", "linux_amd64")) {
		t.Fatalf("signed URL: %d", got.Status)
	}
	pu, _ := url.Parse(u)
	unsigned := *pu
	unsigned.RawQuery = ""
	p.wantError(t, unsigned.String(), http.StatusForbidden, "not signed")
	q := pu.Query()
	other := *pu
	other.Path = strings.Replace(pu.Path, "linux_amd64", "linux_arm64", 1)
	p.wantError(t, other.String(), http.StatusForbidden, "signature is invalid")
	q.Set("expires", fmt.Sprint(time.Now().Add(time.Hour).Unix()))
	pu.RawQuery = q.Encode()
	p.wantError(t, pu.String(), http.StatusForbidden, "signature is invalid")
	p.out.URLs.Now = func() time.Time { return time.Now().Add(2 * time.Minute) }
	p.wantError(t, u, http.StatusForbidden, "expired")
	if strings.Contains(p.logs.String(), token) || strings.Contains(p.logs.String(), "signature=") {
		t.Errorf("secrets in the log:\n%s", p.logs.String())
	}
}

// Other handler sets mount beside the provider protocols and appear in
// the discovery document.
func TestMountAdvertisesService(t *testing.T) {
	dir, _ := layoutStore(t)
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")})
	p.Mount("modules.v1", "/v1/modules/", "modules", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("mod")) }))
	var disco map[string]string
	p.getJSON(t, "/.well-known/terraform.json", 200, &disco)
	if disco["modules.v1"] != "/v1/modules/" || disco["providers.v1"] != "/v1/providers/" {
		t.Fatalf("%v", disco)
	}
	if r := p.get(t, "/v1/modules/x"); string(r.Body) != "mod" {
		t.Fatalf("%s", r.Body)
	}
	if r := p.get(t, "/healthz"); r.Status != 200 {
		t.Fatal(r.Status)
	}
}
