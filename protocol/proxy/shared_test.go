package proxy

import (
	"bytes"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
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

// A 100 MiB record in Redis under the key of a release a request claims
// (someone with access to Redis wrote it, or a man in the middle answers
// with it) is refused before it is read: the release is pulled from the
// origin and served, the record ignored with a warning, and the request
// allocates far less than the record's size.
func TestSharedRecordLargerThanTheBoundIsIgnored(t *testing.T) {
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	d100, d110 := signedRelease(t, "big", "1.0.0", 1024, "linux_amd64"), signedRelease(t, "big", "1.1.0", 1024, "linux_amd64")
	origin := testenv.StartOrigin(t, []testenv.OriginRelease{
		{Namespace: "acme", Type: "big", Dir: d100, Key: key}, {Namespace: "acme", Type: "big", Dir: d110, Key: key}})
	srv := testenv.StartRedis(t)
	var redisLog testenv.LockedBuffer
	shared, err := sharedstate.OpenRedis(sharedstate.RedisOptions{URL: srv.URL(), OpTimeout: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(&redisLog, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shared.Close() })
	base, _ := url.Parse(origin.ProvidersURL())
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+t.TempDir()+"/${namespace}/${type}"),
		PullThrough: &pullthrough.Options{Origins: map[string]*url.URL{"example.com": base}, Client: originClient(t)},
		Store:       store.Options{TagTTL: time.Millisecond, MaxStale: -1, FailureTTL: -1}, Shared: shared})

	// 1.0.0's pull names the records' keys; 1.1.0's is written, 100 MiB.
	if r := p.get(t, pullURL(t, p, "example.com/acme/big", "1.0.0", "linux_amd64")); r.Status != 200 {
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
	sums100, _ := os.ReadFile(filepath.Join(d100, "terraform-provider-big_1.0.0_SHA256SUMS"))
	sums110, _ := os.ReadFile(filepath.Join(d110, "terraform-provider-big_1.1.0_SHA256SUMS"))
	big := strings.Replace(keys[0], " 1.0.0 "+digest.FromBytes(sums100).Encoded(), " 1.1.0 "+digest.FromBytes(sums110).Encoded(), 1)
	if _, err := raw.Do("SETRANGE", big, 100<<20-1, "x"); err != nil {
		t.Fatal(err)
	}

	u := pullURL(t, p, "example.com/acme/big", "1.1.0", "linux_amd64")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := p.get(t, u)
	waitIdle(t, p)
	runtime.ReadMemStats(&after)
	want, _ := os.ReadFile(filepath.Join(d110, "terraform-provider-big_1.1.0_linux_amd64.zip"))
	if r.Status != 200 || !bytes.Equal(r.Body, want) {
		t.Fatalf("1.1.0 with a 100 MiB record: %d, %d bytes (want its own %d)", r.Status, len(r.Body), len(want))
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 50<<20 {
		t.Errorf("the request allocated %d MiB: the 100 MiB record was read", n>>20)
	}
	if !strings.Contains(redisLog.String(), "ignoring a record larger than the bound") {
		t.Errorf("the oversized record is not in the log:\n%s", redisLog.String())
	}
}
