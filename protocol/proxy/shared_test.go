package proxy

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// A record in the shared cache is not trusted: one that names another
// release's root (here 1.0.0's, for 1.1.0) is read from the registry,
// found not to carry the SHA256SUMS the URL names, logged and ignored;
// the client gets 1.1.0's own package, pulled from the origin.
func TestSharedRecordsAreNotTrusted(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	d100, d110 := signedRelease(t, "two", "1.0.0", 1024, "linux_amd64"), signedRelease(t, "two", "1.1.0", 1024, "linux_amd64")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{
		{Namespace: "acme", Type: "two", Dir: d100, Key: key}, {Namespace: "acme", Type: "two", Dir: d110, Key: key}})
	srv := testenv.StartRedis(t)
	shared, err := sharedstate.OpenRedis(sharedstate.RedisOptions{URL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shared.Close() })
	base, _ := url.Parse(origin.ProvidersURL())
	layout := t.TempDir()
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+layout+"/${namespace}/${type}"),
		PullThrough: &pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, Client: originClient(t)},
		Store:       store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}, Shared: shared})

	if r := p.get(t, pullURL(t, p, "example.com/acme/two", "1.0.0", "linux_amd64")); r.Status != 200 {
		t.Fatalf("1.0.0: %d %s", r.Status, r.Body)
	}
	waitIdle(t, p)
	raw, err := redis.DialURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	keys, _ := redis.Strings(raw.Do("KEYS", "oci-tofu:stored *"))
	if len(keys) != 1 {
		t.Fatalf("stored records after one pull: %q", keys)
	}
	record, _ := redis.String(raw.Do("GET", keys[0]))
	sums100, _ := os.ReadFile(filepath.Join(d100, "terraform-provider-two_1.0.0_SHA256SUMS"))
	sums110, _ := os.ReadFile(filepath.Join(d110, "terraform-provider-two_1.1.0_SHA256SUMS"))
	forged := strings.Replace(keys[0], " 1.0.0 "+digest.FromBytes(sums100).Encoded(), " 1.1.0 "+digest.FromBytes(sums110).Encoded(), 1)
	if forged == keys[0] {
		t.Fatalf("unexpected record key %q", keys[0])
	}
	raw.Do("SET", forged, record, "PX", time.Minute.Milliseconds())

	r := p.get(t, pullURL(t, p, "example.com/acme/two", "1.1.0", "linux_amd64"))
	want, _ := os.ReadFile(filepath.Join(d110, "terraform-provider-two_1.1.0_linux_amd64.zip"))
	if r.Status != 200 || !bytes.Equal(r.Body, want) {
		t.Fatalf("1.1.0 with a forged record: %d, %d bytes (want its own %d)", r.Status, len(r.Body), len(want))
	}
	if !strings.Contains(p.logs.String(), "does not confirm") {
		t.Errorf("the forged record was not noticed:\n%s", p.logs.String())
	}
}
