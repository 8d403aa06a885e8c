package proxy

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
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
			ModuleMappings: []*repotemplate.Template{mustModuleTemplate(t, "oci-layout:"+mdir+"/${namespace}/${name}/${system}")}, Shared: shared})
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
	at := time.Now()
	hostile := map[string]any{"v": 1, "failures": 3,
		"providers": []map[string]any{
			{"address": `<script>alert(1)</script>/a/b`, "last": at},
			{"address": "Example.COM/acme/mixed", "last": at}, // not as a replica records it
			{"address": "evil.example/acme/fine", "via": []string{"network mirror", "<b>bold</b>"}, "last": at.Add(1000 * time.Hour),
				"versions": []map[string]any{{"version": "9.9.9", "platforms": []string{"linux_amd64", "<img src=x>"}, "signed": "yes"},
					{"version": "<i>1</i>"}, {"version": "2.0.0", "signed": "maybe"}}},
		},
		"tofu":    []string{"1.9.0", "<script>"},
		"failure": map[string]any{"At": at, "Class": "unavailable", "What": `<script>alert("f")</script>`},
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
