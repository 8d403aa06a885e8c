package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// twoReplicas are two proxies serving the same layouts and sharing the
// Redis srv.
func twoReplicas(t *testing.T, srv *testenv.Redis) (a, b *proxy) {
	t.Helper()
	dir, open := layoutStore(t)
	push(t, open("test", "hello"), releaseArtifact(t, "1.0.0"), "1.0.0")
	mdir, mopen := moduleStore(t)
	push(t, mopen("acme", "network", "aws"), moduleArtifact(t, moduleZip(t, "1.0.0")), names.TagForVersion(mustVersion(t, "1.0.0")))
	start := func() *proxy {
		shared, err := sharedstate.OpenRedis(sharedstate.RedisOptions{URL: srv.URL(), BreakerOpen: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { shared.Close() })
		return startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"),
			ModuleMappings: []*oci.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")}, Shared: shared})
	}
	return start(), start()
}

// waitPage polls p's page until it holds every one of want.
func waitPage(t *testing.T, p *proxy, want ...string) string {
	t.Helper()
	var body string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		r := p.get(t, "/")
		body = string(r.Body)
		missing := false
		for _, w := range want {
			missing = missing || !strings.Contains(body, w)
		}
		if r.Status == 200 && !missing {
			return body
		}
	}
	t.Fatalf("the page never held all of %q:\n%s", want, body)
	return ""
}

// What replica A served shows on replica B's page (B itself served
// nothing); with Redis down B's page still answers, with its own record
// only, and says so.
func TestPageShowsWhatTheFleetServed(t *testing.T) {
	srv := testenv.StartRedis(t)
	a, b := twoReplicas(t, srv)
	if r := a.get(t, "/v1/mirror/example.com/test/hello/1.0.0.json"); r.Status != 200 {
		t.Fatalf("A: %d %s", r.Status, r.Body)
	}
	if r := a.get(t, "/v1/modules/acme/network/aws/versions"); r.Status != 200 {
		t.Fatalf("A, module: %d %s", r.Status, r.Body)
	}
	body := waitPage(t, b, "example.com/<wbr>test/<wbr>hello", "<strong>1.0.0</strong>", "acme/<wbr>network/<wbr>aws",
		"2 replica(s) sharing", "Served since start, by the fleet")
	if !strings.Contains(body, "linux_amd64") {
		t.Errorf("B's page lacks the platforms A served:\n%s", body)
	}
	if own := b.seen.view(); len(own.Providers) != 0 || len(own.Modules) != 0 {
		t.Fatalf("B recorded something itself: %+v", own)
	}
	// Snippets are made from B's own record only.
	if strings.Contains(body, `source = &#34;example.com/test/hello`) {
		t.Errorf("B's client configuration names a provider only A served")
	}

	srv.Stop()
	body = waitPage(t, b, "this replica's record only")
	if strings.Contains(body, "test/<wbr>hello") {
		t.Errorf("with Redis down B's page still shows A's record")
	}
	metrics := string(b.get(t, "/metrics").Body)
	if !strings.Contains(metrics, `oci_tofu_shared_cache_errors_total{op="gather"}`) || strings.Contains(metrics, `oci_tofu_shared_cache_errors_total{op="gather"} 0`) {
		t.Errorf("no gather error counted with Redis down")
	}
	// A's own requests are unaffected.
	if r := a.get(t, "/v1/mirror/example.com/test/hello/1.0.0.json"); r.Status != 200 {
		t.Fatalf("A with Redis down: %d %s", r.Status, r.Body)
	}
	srv.Start(t)
	waitPage(t, b, "example.com/<wbr>test/<wbr>hello", "2 replica(s) sharing")
}

// What another replica published is read as data for display only:
// markup stays escaped, what does not parse as the replica would have
// recorded it is left out, a record that does not read is logged and
// skipped, and the page still answers.
func TestFleetRecordsAreReadForDisplayOnly(t *testing.T) {
	srv := testenv.StartRedis(t)
	_, b := twoReplicas(t, srv)
	raw, err := redis.DialURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	hostile := fleetRecord{V: fleetRecordVersion, Failures: 3,
		Providers: []fleetArtifact{
			{Address: `<script>alert(1)</script>/a/b`, Last: time.Now()},
			{Address: "Example.COM/acme/mixed", Last: time.Now()}, // not as a replica records it
			{Address: "evil.example/acme/fine", Via: []string{"network mirror", "<b>bold</b>"}, Last: time.Now().Add(1000 * time.Hour),
				Versions: []fleetVersion{{Version: "9.9.9", Platforms: []string{"linux_amd64", "<img src=x>"}, Signed: "yes"},
					{Version: "<i>1</i>"}, {Version: "2.0.0", Signed: "maybe"}}},
		},
		Tofu:    []string{"1.9.0", "<script>"},
		Failure: &seenFailure{At: time.Now(), Class: "unavailable", What: `<script>alert("f")</script>`},
	}
	b1, _ := json.Marshal(hostile)
	now := time.Now().UnixMilli()
	for member, rec := range map[string][]byte{"hostile": b1, "garbage": []byte("{not json"), "future": []byte(`{"v":99}`)} {
		if _, err := raw.Do("SET", "oci-tofu:board:seen:"+member, rec, "PX", 60000); err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Do("ZADD", "oci-tofu:board:seen", now, member); err != nil {
			t.Fatal(err)
		}
	}
	body := waitPage(t, b, "evil.example/<wbr>acme/<wbr>fine", "<strong>9.9.9</strong>", "1.9.0")
	for _, bad := range []string{"<script>", "<img", "<b>bold", "<i>1", "2.0.0", "example.com/<wbr>acme/<wbr>mixed", "Example.COM"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page holds %q from a shared record", bad)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;alert(&#34;f&#34;)&lt;/script&gt;") || !strings.Contains(body, "3 registry failure(s)") {
		t.Errorf("the shared failure is not shown escaped:\n%s", body)
	}
	if strings.Contains(body, "evil.example/acme") && strings.Contains(body, "include = [&#34;evil.example") {
		t.Errorf("client configuration built from a shared record")
	}
	if n := strings.Count(b.logs.String(), "does not read: left out of the page"); n < 2 {
		t.Errorf("%d unreadable records logged, want the two:\n%s", n, b.logs.String())
	}
}

// A replica's record fits a shared record however much it served, the
// most recently served kept; it reads back as it was written.
func TestFleetRecordIsBounded(t *testing.T) {
	s := newSeen()
	var vs names.VersionList
	for i := range maxSeenVersions {
		vs = append(vs, mustVersion(t, fmt.Sprintf("1.%d.0", i)))
	}
	var platforms []names.Platform
	for _, p := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64", "windows_amd64", "freebsd_amd64"} {
		pl, _ := names.ParsePlatform(p)
		platforms = append(platforms, pl)
	}
	for i := range maxSeenArtifacts {
		addr := fmt.Sprintf("registry.example.com/namespace-%03d/provider-type-%03d", i, i)
		for _, v := range vs {
			s.ProviderVersion(addr, respond.ViaMirror, v, platforms, true)
		}
	}
	b, err := encodeFleetRecord(s.view())
	if err != nil || len(b) > fleetRecordBytes {
		t.Fatalf("record of %d bytes (%v), bound %d", len(b), err, fleetRecordBytes)
	}
	v, err := readFleetRecord(b, time.Now())
	if err != nil || len(v.Providers) == 0 || len(v.Providers) >= maxSeenArtifacts {
		t.Fatalf("read back %d providers (%v): want fewer than %d, the most recent", len(v.Providers), err, maxSeenArtifacts)
	}
	last := fmt.Sprintf("registry.example.com/namespace-%03d/provider-type-%03d", maxSeenArtifacts-1, maxSeenArtifacts-1)
	found := false
	for _, p := range v.Providers {
		found = found || p.Address == last
		if len(p.Versions) != maxSeenVersions || len(p.Versions[0].Platforms) != len(platforms) || p.Versions[0].Signed != "yes" {
			t.Fatalf("%s read back as %+v", p.Address, p)
		}
	}
	if !found {
		t.Errorf("the most recently served provider %s was left out", last)
	}
}

// Merging joins what each replica saw of an address and keeps the
// bounds.
func TestMergeSeen(t *testing.T) {
	a, b := newSeen(), newSeen()
	pl, _ := names.ParsePlatform("linux_amd64")
	a.ProviderListed("example.com/acme/x", respond.ViaMirror, names.VersionList{mustVersion(t, "1.0.0"), mustVersion(t, "2.0.0")})
	b.ProviderVersion("example.com/acme/x", respond.ViaRegistry, mustVersion(t, "1.0.0"), []names.Platform{pl}, true)
	b.TofuListed([]string{"1.9.0", "1.8.0"})
	a.TofuListed([]string{"1.10.0"})
	b.UpstreamFailure("timeout", "late")
	m := mergeSeen(a.view(), []seenView{b.view()})
	if len(m.Providers) != 1 {
		t.Fatalf("providers: %+v", m.Providers)
	}
	x := m.Providers[0]
	if strings.Join(x.Via, ",") != "network mirror,registry protocol" || len(x.Versions) != 2 ||
		x.Versions[0].Version.String() != "2.0.0" || x.Versions[1].Signed != "yes" || len(x.Versions[1].Platforms) != 1 {
		t.Errorf("merged provider: %+v", x)
	}
	if strings.Join(m.Tofu, ",") != "1.10.0,1.9.0,1.8.0" || m.Failures != 1 || m.Failure.What != "late" {
		t.Errorf("merged: tofu %v, failures %d %+v", m.Tofu, m.Failures, m.Failure)
	}
}
