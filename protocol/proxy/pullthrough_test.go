package proxy

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

func TestPullThroughOptionsChecked(t *testing.T) {
	u, _ := url.Parse("https://origin.example/v1/providers/")
	for _, c := range []struct {
		name            string
		opts            pullthrough.Options
		providers, tofu bool
		want            string
	}{
		{"nothing", pullthrough.Options{}, true, true, "at least one origin"},
		{"no provider template", pullthrough.Options{Origins: map[string]*url.URL{"a.example": nil}}, false, true, "provider template"},
		{"no tofu repository", pullthrough.Options{Tofu: tofuOrigin(t)}, true, false, "TofuDL repository"},
		{"bad host", pullthrough.Options{Origins: map[string]*url.URL{"A B": u}}, true, false, "not a registry hostname"},
		{"registry origin not allowed", pullthrough.Options{Origins: map[string]*url.URL{"a.example": nil}, RegistryOrigin: "b.example"}, true, false, "not one of the allowed"},
	} {
		if err := c.opts.Check(c.providers, c.tofu, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error mentioning %q", c.name, err, c.want)
		}
	}
}

// signedRelease writes a provider release of random zips (size bytes of
// content each), SHA256SUMS and its signature by the go-crypto test key.
func signedRelease(t *testing.T, typ, version string, size int64, platforms ...string) string {
	t.Helper()
	return signedReleaseBy(t, "gocrypto-signer-private.asc", time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), typ, version, size, platforms...)
}

// signedReleaseBy is signedRelease signed at a time with the private key
// of testdata/keys named.
func signedReleaseBy(t *testing.T, key string, at time.Time, typ, version string, size int64, platforms ...string) string {
	t.Helper()
	dir := t.TempDir()
	sums := sha256sums.Sums{}
	for _, p := range platforms {
		name := fmt.Sprintf("terraform-provider-%s_%s_%s.zip", typ, version, p)
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: "terraform-provider-" + typ, Method: zip.Store})
		io.CopyN(w, rand.Reader, size)
		zw.Close()
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		sums[name] = sha256Hex(b.Bytes())
	}
	signer, err := pgp.LoadSigner(testenv.Testdata(t, "keys", key))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := signer.Sign(sums.Bytes(), at)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("terraform-provider-%s_%s_SHA256SUMS", typ, version)), sums.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, fmt.Sprintf("terraform-provider-%s_%s_SHA256SUMS.sig", typ, version)), sig, 0o644)
	return dir
}

// pullProxy serves oci-layout repositories with pull-through from origin
// as example.com. A layout is read through a snapshot the store caches
// like a tag list (and a missing one is remembered like a failure), so the
// test turns those caches off to see what pull-through stored at once, as
// it would with a registry.
func pullProxy(t *testing.T, origin *testenv.Origin, extra pullthrough.Options, tokens ...string) (*proxy, string) {
	t.Helper()
	dir := t.TempDir()
	base, _ := url.Parse(origin.ProvidersURL())
	pt := extra
	pt.Origins = map[string]*url.URL{"example.com": base}
	pt.Client = originClient(t)
	return startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), PullThrough: &pt,
		Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}, AuthTokens: tokens}), dir
}

func originClient(t *testing.T) *origin.Client {
	t.Helper()
	tr, err := oci.NewTransport(oci.Options{CAFile: testenv.NewCA(t).CertFile})
	if err != nil {
		t.Fatal(err)
	}
	return origin.NewClient(tr)
}

// pullURL is the archive URL <version>.json names for a platform.
func pullURL(t *testing.T, p *proxy, addr, version, platform string) string {
	t.Helper()
	u := "/v1/mirror/" + addr + "/" + version + ".json"
	var doc wire.MirrorVersion
	r := p.getJSON(t, u, 200, &doc)
	a, ok := doc.Archives[platform]
	if !ok || len(a.Hashes) != 1 || !strings.HasPrefix(a.Hashes[0], "zh:") || !strings.Contains(a.URL, "/pull/m/") {
		t.Fatalf("%s: %+v", u, doc)
	}
	return resolve(t, r.URL, a.URL)
}

// waitIdle waits until no pull is in flight.
func waitIdle(t *testing.T, p *proxy) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if p.pull.InFlight() == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("pulls still in flight")
		}
	}
}

// The first byte reaches the client long before the origin has sent the
// whole package; the release is stored (all platforms) afterwards and
// served from the registry, also with the origin down. The origin takes
// three seconds to send the package, so that the work before the first
// byte (the release's documents, its signature) fits in the first half
// even on a loaded machine; a client that waited for the download would
// get its first byte at the end.
func TestPullThroughStreamsWhileFetching(t *testing.T) {
	const size = 6 << 20
	dir := signedRelease(t, "big", "1.0.0", size, "linux_amd64", "darwin_arm64")
	origin := testenv.StartOriginWith(t, []testenv.OriginRelease{{Namespace: "acme", Type: "big", Dir: dir, Key: testenv.Testdata(t, "keys", "gocrypto-signer.asc")}},
		testenv.OriginOptions{BytesPerSecond: 2 << 20})
	p, store := pullProxy(t, origin, pullthrough.Options{})
	u := pullURL(t, p, "example.com/acme/big", "1.0.0", "linux_amd64")

	start := time.Now()
	resp, err := p.Client.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	ttfb := time.Since(start)
	rest, err := io.ReadAll(resp.Body)
	total := time.Since(start)
	want, _ := os.ReadFile(filepath.Join(dir, "terraform-provider-big_1.0.0_linux_amd64.zip"))
	if err != nil || !bytes.Equal(append(first, rest...), want) || resp.ContentLength != int64(len(want)) {
		t.Fatalf("streamed %d of %d bytes (Content-Length %d): %v", 1+len(rest), len(want), resp.ContentLength, err)
	}
	if ttfb > total/2 {
		t.Errorf("first byte after %s of %s: the client waited for the download", ttfb, total)
	}
	waitIdle(t, p)
	if _, err := os.Stat(filepath.Join(store, "acme", "big", "index.json")); err != nil {
		t.Fatalf("nothing stored: %v", err)
	}
	if strings.Contains(p.logs.String(), "early upload failed") {
		t.Errorf("uploads while downloading failed:\n%s", p.logs.String())
	}
	origin.Stop()
	// Listings fall back to what the registry holds; the version is served
	// from it (the same URL, and the registry's own).
	var idx wire.MirrorIndex
	p.getJSON(t, "/v1/mirror/example.com/acme/big/index.json", 200, &idx)
	if _, ok := idx.Versions["1.0.0"]; !ok {
		t.Errorf("index with the origin down: %+v", idx)
	}
	if r := p.get(t, u); r.Status != 200 || !bytes.Equal(r.Body, want) {
		t.Errorf("the pull URL after the release was stored: %d, %s", r.Status, r.Body)
	}
	var doc wire.MirrorVersion
	r := p.getJSON(t, "/v1/mirror/example.com/acme/big/1.0.0.json", 200, &doc)
	a := doc.Archives["darwin_arm64"]
	if !strings.Contains(a.URL, "/archives/") || len(a.Hashes) != 2 {
		t.Fatalf("version document once stored: %+v", doc)
	}
	if r := p.get(t, resolve(t, r.URL, a.URL)); r.Status != 200 || len(r.Body) < size {
		t.Errorf("darwin_arm64 from the registry: %d, %d bytes", r.Status, len(r.Body))
	}
}

// A package whose last bytes differ from what the signed SHA256SUMS lists
// is streamed, and the transfer aborted before its end: the client never
// holds the whole (wrong) file, and nothing is tagged.
func TestPullThroughAbortsTamperedStream(t *testing.T) {
	const size = 4 << 20
	dir := signedRelease(t, "big", "1.0.0", size, "linux_amd64")
	origin := testenv.StartOriginWith(t, []testenv.OriginRelease{{Namespace: "acme", Type: "big", Dir: dir, Key: testenv.Testdata(t, "keys", "gocrypto-signer.asc")}},
		testenv.OriginOptions{BytesPerSecond: 8 << 20})
	origin.Tamper(t, "files/acme/big/terraform-provider-big_1.0.0_linux_amd64.zip", func(b []byte) []byte {
		b[len(b)-1] ^= 1
		return b
	})
	p, store := pullProxy(t, origin, pullthrough.Options{})
	u := pullURL(t, p, "example.com/acme/big", "1.0.0", "linux_amd64")
	whole, err := os.ReadFile(filepath.Join(origin.Root, "files/acme/big/terraform-provider-big_1.0.0_linux_amd64.zip"))
	if err != nil {
		t.Fatal(err)
	}
	r := p.get(t, u)
	if r.Err == nil || len(r.Body) >= len(whole) {
		t.Fatalf("a tampered package was served whole: status %d, %d bytes, %v", r.Status, len(r.Body), r.Err)
	}
	if len(r.Body) == 0 {
		t.Errorf("nothing was streamed before the end")
	}
	waitIdle(t, p)
	if _, err := os.Stat(filepath.Join(store, "acme", "big", "index.json")); err == nil {
		b, _ := os.ReadFile(filepath.Join(store, "acme", "big", "index.json"))
		var idx struct{ Manifests []map[string]any }
		json.Unmarshal(b, &idx)
		if len(idx.Manifests) > 0 {
			t.Errorf("a tampered release was tagged: %s", b)
		}
	}
	if !strings.Contains(p.logs.String(), "reason=digest_mismatch") {
		t.Errorf("no abort logged:\n%s", p.logs.String())
	}
	// Remembered: the next request fails at once without the origin.
	before := origin.Count(func(string) bool { return true })
	p.wantError(t, "/v1/mirror/example.com/acme/big/1.0.0.json", 502, "remembered")
	if origin.Count(func(string) bool { return true }) != before {
		t.Error("the origin was asked again within the failure TTL")
	}
}

// tofuOrigin is a TofuDL origin (never contacted by these tests).
func tofuOrigin(t *testing.T) *ingest.TofuOrigin {
	t.Helper()
	kr, err := pgp.LoadKeyring(testenv.Testdata(t, "keys", "gpg-signer.asc"))
	if err != nil {
		t.Fatal(err)
	}
	o, err := ingest.NewTofuOrigin("https://tofu.example/api.json", "", []*pgp.Keyring{kr}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// With client authentication, pull URLs are signed and expire like
// archive URLs: unsigned or altered ones are refused before anything is
// fetched.
func TestPullThroughURLsSigned(t *testing.T) {
	const token = "pull-through-token-0123456789"
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{{Namespace: "test", Type: "hello", Dir: testenv.Testdata(t, "providers", "hello", "1.0.0"), Key: testenv.Testdata(t, "keys", "gpg-signer.asc")}})
	p, _ := pullProxy(t, origin, pullthrough.Options{}, token)
	auth := map[string]string{"Authorization": "Bearer " + token}
	if r := p.get(t, "/v1/mirror/example.com/test/hello/1.0.0.json"); r.Status != 401 {
		t.Fatalf("metadata without a token: %d", r.Status)
	}
	r := p.do(t, "GET", "/v1/mirror/example.com/test/hello/1.0.0.json", auth)
	var doc wire.MirrorVersion
	if err := json.Unmarshal(r.Body, &doc); err != nil || r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	signed := resolve(t, r.URL, doc.Archives["linux_amd64"].URL)
	if !strings.Contains(signed, "signature=") {
		t.Fatalf("pull URL not signed: %s", signed)
	}
	unsigned, _, _ := strings.Cut(signed, "?")
	if r := p.get(t, unsigned); r.Status != 403 {
		t.Errorf("unsigned pull URL: %d", r.Status)
	}
	if n := origin.Count(func(p string) bool { return strings.HasSuffix(p, ".zip") }); n != 0 {
		t.Errorf("an unsigned request reached the origin")
	}
	if r := p.get(t, signed); r.Status != 200 || !bytes.Equal(r.Body, fixtureZip(t, "1.0.0", "linux_amd64")) {
		t.Errorf("signed pull URL: %d, %d bytes", r.Status, len(r.Body))
	}
}

// Close gives pulls in flight until its context ends, then cancels them:
// nothing is tagged and their temporary files are removed.
func TestCloseCancelsPullsAtItsDeadline(t *testing.T) {
	origin := testenv.StartOriginWith(t, []testenv.OriginRelease{{Namespace: "test", Type: "hello", Dir: testenv.Testdata(t, "providers", "hello", "1.0.0"), Key: testenv.Testdata(t, "keys", "gpg-signer.asc")}},
		testenv.OriginOptions{Latency: 300 * time.Millisecond})
	tmp := t.TempDir()
	p, dir := pullProxy(t, origin, pullthrough.Options{TempDir: tmp})
	zip := pullURL(t, p, "example.com/test/hello", "1.0.0", "linux_amd64")
	if r := p.get(t, zip); r.Status != 200 {
		t.Fatalf("the first archive: %d", r.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := p.Server.Close(ctx); err == nil {
		t.Fatalf("Close returned nil although the pull could not finish in 20ms")
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the cancelled pull left %d entries in its temporary directory", len(left))
	}
	if _, err := os.Stat(filepath.Join(dir, "test", "hello", "index.json")); err == nil {
		if b, _ := os.ReadFile(filepath.Join(dir, "test", "hello", "index.json")); strings.Contains(string(b), `"1.0.0"`) {
			t.Errorf("the cancelled pull tagged 1.0.0: %s", b)
		}
	}
}

// A release pull-through stored is served from the registry at once, also
// while the store still remembers its tag as missing from before the pull
// (--failure-ttl) and with the origin down and its release forgotten
// (--pull-through-listing-ttl): the version document names the
// registry's archives, not a 502 for an unreachable origin.
func TestPullThroughStoredServedWhileTagRemembered(t *testing.T) {
	dir := signedRelease(t, "small", "1.0.0", 1<<10, "linux_amd64", "darwin_arm64")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{{Namespace: "acme", Type: "small", Dir: dir, Key: testenv.Testdata(t, "keys", "gocrypto-signer.asc")}})
	base, _ := url.Parse(origin.ProvidersURL())
	pt := pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, Client: originClient(t), ListingTTL: time.Millisecond}
	reg := testenv.StartRegistry(t)
	upstream, _ := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	p := startProxy(t, Options{Client: upstream, ProviderMappings: mustMapping(t, reg.Host+"/pulled/${namespace}/${type}"), PullThrough: &pt,
		Store: store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: time.Minute}})
	u := pullURL(t, p, "example.com/acme/small", "1.0.0", "linux_amd64")
	if r := p.get(t, u); r.Status != 200 {
		t.Fatalf("pulling: %d %s", r.Status, r.Body)
	}
	waitIdle(t, p)
	origin.Stop()
	time.Sleep(10 * time.Millisecond) // the origin's listing and release expire
	var doc wire.MirrorVersion
	r := p.getJSON(t, "/v1/mirror/example.com/acme/small/1.0.0.json", 200, &doc)
	a, ok := doc.Archives["darwin_arm64"]
	if !ok || !strings.Contains(a.URL, "/archives/") {
		t.Fatalf("version document once stored, the origin down: %+v", doc)
	}
	if r := p.get(t, resolve(t, r.URL, a.URL)); r.Status != 200 {
		t.Errorf("darwin_arm64 from the registry: %d %s", r.Status, r.Body)
	}
}
