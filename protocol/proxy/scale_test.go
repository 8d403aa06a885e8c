package proxy

import (
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// scaleVersions is the number of versions of the provider the scale test
// pushes (× 4 platforms, signed).
const scaleVersions = 300

// The behaviour behind the distance goals (docs/benchmarks.md), counted
// at a front that puts the registry 100 ms away, so that each request's
// Round is the number of sequential round trips the proxy made to get
// there: a provider with hundreds of versions listed cold in one round for
// the tags and one per 64 versions (Concurrency), one request per version;
// index.json in one round trip, <version>.json and the download document in
// three; an archive after its metadata in one; after the TTLs no client
// waits for the registry; and fifty such providers held within the cache
// bound.
func TestManyVersions(t *testing.T) {
	reg := testenv.StartRegistry(t)
	seed.SignedProvider(t, reg, "scale/acme0/big", scaleVersions)
	for i := 1; i < 50; i++ {
		reg.AliasRepository(t, "scale/acme0/big", fmt.Sprintf("scale/acme%d/big", i))
	}
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("memory-bounded", func(t *testing.T) { testScaleMemory(t, reg, client) })
	t.Run("round-trips", func(t *testing.T) { testScaleRoundTrips(t, reg, client) })
	t.Run("stale-while-revalidate", func(t *testing.T) { testScaleNoWaitAfterTTL(t, reg, client) })
}

// scaleProxy serves the scale providers (scale/acmeN/big: the type is "big" in every copy) from host.
func scaleProxy(t *testing.T, client *oci.Client, host string, opts Options) *proxy {
	opts.Client = client
	opts.ProviderMappings = mustMapping(t, host+"/scale/${namespace}/${type}")
	return startProxy(t, opts)
}

func testScaleRoundTrips(t *testing.T, reg *testenv.Registry, client *oci.Client) {
	// A request of a fan-out that reaches the front after another of the
	// same fan-out was answered counts as a round of its own: the latency
	// is long enough that a busy machine's scheduling delays (tens of
	// milliseconds at a load of 20) stay well inside one round.
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Latency: 400 * time.Millisecond})
	p := scaleProxy(t, client, front.Host, Options{})
	const concurrency = 64 // the test client's etiquette (oci's default), below the store's fan-out
	v := seed.Version(scaleVersions / 2)

	// counted GETs u (wanting 200) and returns the registry requests it
	// made and their rounds.
	counted := func(t *testing.T, u string, out any) ([]testenv.AccessEntry, int) {
		t.Helper()
		front.ResetLog()
		p.getJSON(t, u, http.StatusOK, out)
		return settledLog(front), front.Rounds()
	}
	t.Run("versions", func(t *testing.T) {
		var doc wire.RegistryVersions
		log, rounds := counted(t, "/v1/providers/acme0/big/versions", &doc)
		if len(doc.Versions) != scaleVersions || len(doc.Warnings) != 0 {
			t.Fatalf("%d versions, warnings %q", len(doc.Versions), doc.Warnings)
		}
		if len(log) > scaleVersions+3 {
			t.Errorf("%d registry requests for %d versions, want one per version and a few more:\n%s", len(log), scaleVersions, summariseLog(log))
		}
		// The slots of the fan-out are refilled as reads end, so a slot
		// that ends early takes one read more than the even share: one
		// round of slack for that, one for the index fetch before.
		if want := 1 + (scaleVersions+concurrency-1)/concurrency + 2; rounds > want {
			t.Errorf("%d sequential round trips, want at most %d (the tags, then %d versions at a time)", rounds, want, concurrency)
		}
	})
	t.Run("index.json", func(t *testing.T) {
		var doc wire.MirrorIndex
		log, rounds := counted(t, "/v1/mirror/registry.opentofu.org/acme1/big/index.json", &doc)
		if len(doc.Versions) != scaleVersions || len(log) != 1 || rounds != 1 {
			t.Errorf("%d versions from %d requests in %d round trips, want %d from 1 in 1:\n%s", len(doc.Versions), len(log), rounds, scaleVersions, summariseLog(log))
		}
	})
	var archiveURL string
	t.Run("version.json", func(t *testing.T) {
		var doc wire.MirrorVersion
		u := "/v1/mirror/registry.opentofu.org/acme2/big/" + v + ".json"
		log, rounds := counted(t, u, &doc)
		a, ok := doc.Archives["linux_amd64"]
		if len(doc.Archives) != 4 || !ok || len(a.Hashes) != 2 {
			t.Fatalf("archives %+v", doc.Archives)
		}
		if rounds > 2 {
			t.Errorf("%d sequential round trips, want at most 2 (the version's index and the version index, then the provenance manifest, the files the version index names and the platform manifests):\n%s", rounds, summariseLog(log))
		}
		base, err := url.Parse(p.URL + u)
		if err != nil {
			t.Fatal(err)
		}
		archiveURL = resolve(t, base, a.URL)
	})
	t.Run("download", func(t *testing.T) {
		var doc wire.RegistryDownload
		log, rounds := counted(t, "/v1/providers/acme3/big/"+v+"/download/linux/amd64", &doc)
		if len(doc.Packages) != 4 || len(doc.SigningKeys.GPGPublicKeys) != 1 {
			t.Fatalf("download document %+v", doc)
		}
		if rounds > 2 {
			t.Errorf("%d sequential round trips, want at most 2:\n%s", rounds, summariseLog(log))
		}
	})
	t.Run("archive-after-metadata", func(t *testing.T) {
		front.ResetLog()
		if r := p.get(t, archiveURL); r.Status != http.StatusOK || r.Err != nil {
			t.Fatalf("GET %s: %d %v", archiveURL, r.Status, r.Err)
		}
		if log := front.Log(); len(log) != 1 || !strings.Contains(log[0].Path, "/blobs/") {
			t.Errorf("an archive whose metadata was just served took %d registry requests, want the blob alone:\n%s", len(log), summariseLog(log))
		}
	})
}

// After the TTLs, documents are answered at once, stale, while the
// registry is asked again in the background: here the registry never
// answers, and clients still get their documents.
//
// The proxy gives up on a registry read after a minute: while the
// documents are first read (300 tags on a machine that may be loaded),
// no read comes near that; once the registry hangs, a proxy that waited
// for it would keep its client past the client's 30 s timeout. The
// revalidations are seen as they arrive at the registry, not when the
// proxy gives up on them.
func testScaleNoWaitAfterTTL(t *testing.T, reg *testenv.Registry, client *oci.Client) {
	front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{})
	const ttl, giveUp = 500 * time.Millisecond, time.Minute
	p := scaleProxy(t, client, front.Host, Options{Store: store.Options{TagTTL: ttl, ResolveTTL: ttl, Timeout: giveUp}})
	docs := []string{
		"/v1/providers/acme4/big/versions",
		"/v1/mirror/registry.opentofu.org/acme4/big/index.json",
		"/v1/mirror/registry.opentofu.org/acme4/big/" + seed.Version(3) + ".json",
		"/v1/providers/acme4/big/" + seed.Version(3) + "/download/linux/amd64",
	}
	warm := map[string]string{}
	for _, u := range docs {
		warm[u] = string(p.getJSON(t, u, http.StatusOK, nil).Body)
	}
	time.Sleep(2 * ttl)
	var asked atomic.Int64
	front.SetFaults(testenv.FaultRule{
		Match: func(*http.Request) bool { asked.Add(1); return true },
		Fault: testenv.Fault{Hang: testenv.HangUntilClientLeaves},
	})
	p.Client.Timeout = giveUp / 2 // a client that waited for the registry would time out
	for _, u := range docs {
		if got := string(p.getJSON(t, u, http.StatusOK, nil).Body); got != warm[u] {
			t.Errorf("%s after the TTL:\n%s\nwant the document served before:\n%s", u, got, warm[u])
		}
	}
	// The revalidations did go to the registry (and hang there).
	for deadline := time.Now().Add(giveUp); asked.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no revalidation reached the registry")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Fifty providers of hundreds of versions, listed: the caches hold what
// CacheBytes allows, and the heap grows by about that much, not by what
// the listings would take unbounded (about 3 KiB a version, 45 MiB here).
func testScaleMemory(t *testing.T, reg *testenv.Registry, client *oci.Client) {
	const bound = 8 << 20
	p := scaleProxy(t, client, reg.Host, Options{CacheBytes: bound})
	versions := func(i int) string { return fmt.Sprintf("/v1/providers/acme%d/big/versions", i) }
	p.getJSON(t, versions(0), http.StatusOK, nil) // connections to the registry open, buffers allocated
	before := heapInUse()
	for i := 1; i < 50; i++ {
		var doc wire.RegistryVersions
		p.getJSON(t, versions(i), http.StatusOK, &doc)
		if len(doc.Versions) != scaleVersions {
			t.Fatalf("provider %d: %d versions", i, len(doc.Versions))
		}
	}
	held := p.cacheCost()
	grown := int64(heapInUse()) - int64(before)
	t.Logf("caches hold %.1f MiB by their count; the heap grew by %.1f MiB", float64(held)/(1<<20), float64(grown)/(1<<20))
	if held > bound {
		t.Errorf("the caches hold %d bytes, more than CacheBytes (%d)", held, bound)
	}
	// The slack is for what is not cached: connections, goroutines, the
	// runtime's own growth.
	if slack := int64(8 << 20); grown > bound+slack {
		t.Errorf("the heap grew by %.1f MiB with CacheBytes %d MiB: the caches' costs under-count what they hold", float64(grown)/(1<<20), bound>>20)
	}
	var doc wire.RegistryVersions
	p.getJSON(t, versions(0), http.StatusOK, &doc)
	if len(doc.Versions) != scaleVersions {
		t.Fatalf("after evictions: %d versions", len(doc.Versions))
	}
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// summariseLog is the first lines of an access log, for failure messages.
func summariseLog(log []testenv.AccessEntry) string {
	var b strings.Builder
	for i, e := range log {
		if i == 20 {
			fmt.Fprintf(&b, "… and %d more\n", len(log)-i)
			break
		}
		fmt.Fprintf(&b, "round %d: %s\n", e.Round, e)
	}
	return b.String()
}

// settledLog is front's log once no entry has been added for 100 ms (at
// most 2 s): the front records a request after it has written the
// answer, so a client can have read it before the entry is there (seen
// on a loaded CI machine: one request logged as none).
func settledLog(front *testenv.Front) []testenv.AccessEntry {
	deadline := time.Now().Add(2 * time.Second)
	log := front.Log()
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		next := front.Log()
		if len(next) == len(log) {
			return next
		}
		log = next
	}
	return log
}
