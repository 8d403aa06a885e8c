package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/events/webhook"
)

// BenchmarkPullThrough installs a 6-platform provider (16 MiB zips) with
// the real tofu: straight from its origin registry, and through the proxy
// in pull-through mode (network mirror) — the first install, which the
// proxy fetches from the origin while streaming it, then, once the release
// is stored, a second install in a fresh directory, served from the
// registry. The origin stands in for a remote registry as in
// BenchmarkMirror: 30 ms before each answer, 16 MiB/s per connection.
// Each iteration uses a provider the registry does not hold yet; the sides
// alternate order between iterations, and each figure is the median.
// Metrics first/direct (goal ≤ 1.2) and second/direct (goal ≤ 0.5), plus
// the first install through the registry protocol for comparison, and
// the first install through a second proxy sending events (--events-file,
// a local receiver; the pull-through's version.ingested among them) beside
// the plain proxy's: first-events/first [goal: no latency added, ≈ 1].
func BenchmarkPullThrough(b *testing.B) {
	const zipSize = 16 << 20
	bin := buildOCITofu(b)
	reg := testenv.StartRegistry(b)
	key := testenv.Testdata(b, "keys", "gocrypto-signer.asc")
	var releases []testenv.OriginRelease
	for i := 0; i < 3*b.N; i++ {
		typ := fmt.Sprintf("pt%d", i)
		dir := filepath.Join(b.TempDir(), typ)
		writeRelease(b, dir, typ, zipSize, sixPlatforms)
		releases = append(releases, testenv.OriginRelease{Namespace: "acme", Type: typ, Dir: dir, Key: key})
	}
	origin := testenv.StartOriginWith(b, releases, testenv.OriginOptions{Latency: 30 * time.Millisecond, BytesPerSecond: 16 << 20})
	proxy := startServe(b, bin, "--provider-template", reg.Host+"/pulled/${hostname}/${namespace}/${type}",
		"--pull-through-origin", "example.com="+origin.ProvidersURL(),
		"--pull-through-origin", origin.Host, "--pull-through-registry-origin", origin.Host, "--registry-hostname", "localhost")
	var received atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(receiver.Close)
	eventsFile := filepath.Join(b.TempDir(), "events.yaml")
	writeBenchFile(b, eventsFile, fmt.Sprintf("subscriptions:\n- name: bench\n  url: %s/hook\n  secrets: [%s]\n", receiver.URL, webhook.NewSecret()))
	evProxy := startServe(b, bin, "--provider-template", reg.Host+"/pulled/${hostname}/${namespace}/${type}",
		"--pull-through-origin", "example.com="+origin.ProvidersURL(), "--registry-hostname", "localhost", "--events-file", eventsFile)
	viaEvents := testenv.Tofu(b, fmt.Sprintf("provider_installation {\n  network_mirror {\n    url = \"https://%s/v1/mirror/\"\n  }\n}\n", evProxy))
	direct := testenv.Tofu(b, "")
	viaMirror := testenv.Tofu(b, fmt.Sprintf("provider_installation {\n  network_mirror {\n    url = \"https://%s/v1/mirror/\"\n  }\n}\n", proxy))
	viaRegistry := testenv.Tofu(b, "")
	install := func(cli *testenv.CLI, addr string) time.Duration {
		cfg := fmt.Sprintf("terraform {\n  required_providers {\n    p = { source = %q, version = \"1.0.0\" }\n  }\n}\n", addr)
		dir := testenv.WriteConfig(b, map[string]string{"main.tf": cfg})
		d, _ := runMeasured(b, cli.Env, cli.Path, "-chdir="+dir, "init", "-input=false", "-no-color")
		return d
	}
	var directs, firsts, seconds, registryFirsts, eventFirsts []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		typ, typ2, typ3 := releases[3*i].Type, releases[3*i+1].Type, releases[3*i+2].Type
		measureDirect := func() { directs = append(directs, install(direct, origin.Host+"/acme/"+typ)) }
		measureFirst := func() { firsts = append(firsts, install(viaMirror, "example.com/acme/"+typ)) }
		measureEvents := func() { eventFirsts = append(eventFirsts, install(viaEvents, "example.com/acme/"+typ3)) }
		order := []func(){measureDirect, measureFirst, measureEvents}
		for k := range order {
			order[(i+k)%len(order)]()
		}
		waitStored(b, reg, "pulled/example.com/acme/"+typ)
		seconds = append(seconds, install(viaMirror, "example.com/acme/"+typ))
		registryFirsts = append(registryFirsts, install(viaRegistry, proxy+"/acme/"+typ2))
		waitStored(b, reg, "pulled/localhost/acme/"+typ2)
		waitStored(b, reg, "pulled/example.com/acme/"+typ3)
	}
	b.StopTimer()
	if received.Load() == 0 {
		b.Fatal("the receiver got no event: the events side sent none")
	}
	d, f, s, r := medianDuration(directs), medianDuration(firsts), medianDuration(seconds), medianDuration(registryFirsts)
	b.ReportMetric(d.Seconds(), "direct-s")
	b.ReportMetric(f.Seconds(), "first-s")
	b.ReportMetric(f.Seconds()/d.Seconds(), "first/direct")
	b.ReportMetric(s.Seconds(), "second-s")
	b.ReportMetric(s.Seconds()/d.Seconds(), "second/direct")
	b.ReportMetric(r.Seconds()/d.Seconds(), "registry-first/direct")
	e := medianDuration(eventFirsts)
	b.ReportMetric(e.Seconds()/f.Seconds(), "first-events/first")
	b.ReportMetric(float64(received.Load()), "events-received")
	b.ReportMetric(0, "ns/op")
}

// waitStored waits until pull-through has tagged 1.0.0 in repo (the other
// platforms complete in the background after an install).
func waitStored(b *testing.B, reg *testenv.Registry, repo string) {
	b.Helper()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		b.Fatal(err)
	}
	r, err := client.OpenReadOnly(context.Background(), oci.Reference{Registry: reg.Host, Repository: repo})
	if err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := r.Resolve(context.Background(), "1.0.0"); err == nil {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s:1.0.0 was never stored", repo)
		}
	}
}

func medianDuration(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
