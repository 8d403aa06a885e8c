package proxy

import (
	"bytes"
	"crypto/rand"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/deliver"
)

// Archives of sizes around the stream's buffer boundaries arrive whole
// and exact over HTTP/1.1 (streamed inline) and HTTP/2 (through a reader
// goroutine): the held-back last buffer, an end that falls exactly on a
// buffer's end, a single byte. Corrupted, a blob ending on a buffer's end
// still never arrives whole: its last buffer waits for the digest.
func TestStreamsWholeBlobAtBufferBoundaries(t *testing.T) {
	sizes := map[names.Platform]int{
		{OS: "linux", Arch: "amd64"}:   1,
		{OS: "linux", Arch: "arm64"}:   deliver.StreamBufferSize - 1,
		{OS: "darwin", Arch: "amd64"}:  deliver.StreamBufferSize,
		{OS: "darwin", Arch: "arm64"}:  deliver.StreamBufferSize + 1,
		{OS: "windows", Arch: "amd64"}: 3 * deliver.StreamBufferSize,
		{OS: "freebsd", Arch: "amd64"}: 5*deliver.StreamBufferSize + 12345,
	}
	zips := map[names.Platform][]byte{}
	for pl, n := range sizes {
		zips[pl] = make([]byte, n)
		rand.Read(zips[pl])
	}
	dir, open := layoutStore(t)
	push(t, open("edge", "sizes"), thirdPartyArtifact(t, zips), "1.0.0")
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")})
	var mv networkMirrorVersion
	r := p.getJSON(t, "/v1/mirror/example.com/edge/sizes/1.0.0.json", 200, &mv)
	for pl, want := range zips {
		u := resolve(t, r.URL, mv.Archives[pl.String()].URL)
		for _, proto := range []string{"HTTP/2.0", "HTTP/1.1"} {
			got, gotProto, err := downloadWith(t, p, u, proto == "HTTP/1.1")
			if err != nil || gotProto != proto || !bytes.Equal(got, want) {
				t.Errorf("%s over %s: %d of %d bytes, equal %v, err %v", pl, gotProto, len(got), len(want), bytes.Equal(got, want), err)
			}
		}
	}
	exact := names.Platform{OS: "windows", Arch: "amd64"}
	bad := bytes.Clone(zips[exact])
	bad[0] ^= 0x55
	blob := filepath.Join(dir, "edge", "sizes", "blobs", "sha256", sha256Hex(zips[exact]))
	if err := os.WriteFile(blob, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	u := resolve(t, r.URL, mv.Archives[exact.String()].URL)
	for _, http1 := range []bool{false, true} {
		if got, proto, err := downloadWith(t, p, u, http1); err == nil || len(got) >= len(bad) {
			t.Errorf("corrupt %s over %s: %d of %d bytes, err %v", exact, proto, len(got), len(bad), err)
		}
	}
}

// downloadWith downloads u over HTTP/2, or HTTP/1.1 if http1, and returns
// the body, the protocol the answer came in and the error that ended the
// download, if any.
func downloadWith(t *testing.T, p *proxy, u string, http1 bool) ([]byte, string, error) {
	t.Helper()
	c := p.Client
	if http1 {
		cfg := p.Client.Transport.(*http.Transport).TLSClientConfig.Clone()
		cfg.NextProtos = []string{"http/1.1"}
		c = &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
		defer c.CloseIdleConnections()
	}
	resp, err := c.Get(u)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return b, resp.Proto, err
}
