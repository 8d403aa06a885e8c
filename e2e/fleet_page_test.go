package e2e

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// replicaPage polls a replica's page (straight, not through nginx) until
// it holds every one of want, and returns it.
func replicaPage(t *testing.T, f *testenv.Fleet, r *testenv.Replica, want ...string) string {
	t.Helper()
	var body string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := f.Client.Get(r.URL + "/")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		body = string(b)
		ok := resp.StatusCode == 200
		for _, w := range want {
			ok = ok && strings.Contains(body, w)
		}
		if ok {
			return body
		}
	}
	t.Fatalf("%s's page never held all of %q:\n%s", r.URL, want, body)
	return ""
}

// Three serve processes without pull-through share their pages' records
// through Redis: what replica A served (asked of A directly) shows on
// B's and C's pages; each says at start what Redis is used for; with
// Redis stopped the pages answer with their own records, and say so.
// The Redis password is given in OCI_TOFU_SHARED_CACHE_PASSWORD, not in
// the URL on the command line, and no replica logs it.
func TestFleetPagesShowWhatTheFleetServed(t *testing.T) {
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0", "1.1.0")
	redis := testenv.StartRedis(t)
	f := testenv.StartFleet(t, ociTofu, 3, []string{"OCI_TOFU_SHARED_CACHE_PASSWORD=" + redis.Password},
		"--provider-template", reg.Host+"/providers/${namespace}/${type}", "--shared-cache", "redis://"+redis.Addr+"/0")
	t.Cleanup(func() {
		for _, r := range f.Replicas {
			if strings.Contains(r.Logs.String(), redis.Password) {
				t.Errorf("%s logged the Redis password", r.URL)
			}
		}
	})
	a, b, c := f.Replicas[0], f.Replicas[1], f.Replicas[2]
	for _, r := range f.Replicas {
		if !strings.Contains(r.Logs.String(), "shared cache: the page's record of what the fleet served is shared with the other replicas (without pull-through, nothing else is)") {
			t.Errorf("a replica does not say what Redis is used for:\n%s", r.Logs.String())
		}
	}
	for _, doc := range []string{"index.json", "1.1.0.json"} {
		if err := fetchOK(f.Client, a.URL+"/v1/mirror/example.com/test/hello/"+doc); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []*testenv.Replica{b, c} {
		page := replicaPage(t, f, r, "example.com/<wbr>test/<wbr>hello", "<strong>1.1.0</strong>", "linux_amd64", "3 replica(s) sharing")
		if !strings.Contains(page, "network mirror") {
			t.Errorf("%s's page does not say through which protocol A served it", r.URL)
		}
	}
	redis.Stop()
	page := replicaPage(t, f, b, "this replica's record only")
	if strings.Contains(page, "test/<wbr>hello") {
		t.Error("with Redis stopped, B's page still shows what A served")
	}
	if err := fetchOK(f.Client, b.URL+"/v1/mirror/example.com/test/hello/1.0.0.json"); err != nil {
		t.Errorf("B with Redis stopped: %v", err)
	}
	replicaPage(t, f, b, "example.com/<wbr>test/<wbr>hello", "<strong>1.0.0</strong>")
	if !strings.Contains(b.Logs.String(), "shared cache unavailable") {
		t.Error("B did not log that Redis is unavailable")
	}
}
