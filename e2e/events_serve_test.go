package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/events"
	"github.com/oci-tofu/oci-tofu/protocol/events/webhook"
)

// webhookSink is a webhook endpoint on 127.0.0.1 that verifies each
// delivery with the Standard Webhooks reference library (not oci-tofu's
// code) and keeps the events it verified.
type webhookSink struct {
	url, secret string
	hook        *standardwebhooks.Webhook

	mu  sync.Mutex
	got []events.Event
	bad []string
}

func newWebhookSink(t *testing.T) *webhookSink {
	t.Helper()
	k := &webhookSink{secret: webhook.NewSecret()}
	h, err := standardwebhooks.NewWebhook(k.secret)
	if err != nil {
		t.Fatal(err)
	}
	k.hook = h
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		k.mu.Lock()
		defer k.mu.Unlock()
		if err := k.hook.Verify(body, r.Header); err != nil {
			k.bad = append(k.bad, err.Error())
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		e, err := events.Parse(body)
		if err != nil {
			k.bad = append(k.bad, err.Error())
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		k.got = append(k.got, e)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	k.url = srv.URL + "/hook"
	return k
}

// file writes a subscriptions file sending every event to the sink.
func (k *webhookSink) file(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.yaml")
	body := fmt.Sprintf("subscriptions:\n- name: e2e\n  url: %s\n  secrets: [%s]\n", k.url, k.secret)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// wait returns the events of type typ and subject, once n of them
// arrived (failing after 20 s or on a delivery the library refused).
func (k *webhookSink) wait(t *testing.T, typ, subject string, n int) []events.Event {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		k.mu.Lock()
		var out []events.Event
		for _, e := range k.got {
			if e.Type == typ && e.Subject == subject {
				out = append(out, e)
			}
		}
		bad, all := append([]string(nil), k.bad...), append([]events.Event(nil), k.got...)
		k.mu.Unlock()
		if len(bad) > 0 {
			t.Fatalf("deliveries the Standard Webhooks library refused: %q", bad)
		}
		if len(out) >= n {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s events for %s after 20 s, want %d; got %+v", len(out), typ, subject, n, all)
		}
	}
}

// serve --events-file, with real tofu: a provider release tofu's install
// pulls through from its origin is one version.ingested event (via
// pull-through, the digest the registry's tag names), and an install of
// a version the policy denies is a policy.denied event naming the rule;
// each delivery verified by the Standard Webhooks reference library.
// (That a decision is sent once per policy generation, however often
// clients ask, is protocol/proxy's TestEventsPolicyDeniedAndWarnedOnce.)
func TestServeEventsFromRealTofu(t *testing.T) {
	origin := startHelloOrigin(t)
	reg := testenv.StartRegistry(t)
	sink := newWebhookSink(t)
	policyFile := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(policyFile, []byte(helloPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, pullThroughArgs(reg, origin, "--policy", policyFile, "--events-file", sink.file(t))...)
	tofu := testenv.Tofu(t, networkMirrorConfig(s))

	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "1.0.0")})
	if out := tofu.Run(t, dir, "init", "-input=false", "-no-color"); !strings.Contains(out, "Installed example.com/test/hello v1.0.0") {
		t.Fatalf("1.0.0 not installed:\n%s", out)
	}
	stored := waitForTag(t, reg, "pulled/example.com/test/hello", "1.0.0")
	got := sink.wait(t, events.TypeVersionIngested, "example.com/test/hello@1.0.0", 1)
	d, ok := got[0].Data.(events.VersionIngested)
	if len(got) != 1 || !ok || d.Via != events.ViaPullThrough || d.Kind != events.KindProvider || d.Digest != stored ||
		d.Repository != reg.Host+"/pulled/example.com/test/hello" {
		t.Errorf("version.ingested: %+v (data %+v); want one, via pull-through, digest %s", got, got[0].Data, stored)
	}

	dir = testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "1.1.0")})
	if out, err := tofu.Try(t, dir, "init", "-input=false", "-no-color"); err == nil {
		t.Fatalf("tofu installed the denied 1.1.0:\n%s", out)
	}
	denied := sink.wait(t, events.TypePolicyDenied, "example.com/test/hello@1.1.0", 1)
	p, ok := denied[0].Data.(events.PolicyDecision)
	if len(denied) != 1 || !ok || p.Rule != "hello-policy" || !strings.Contains(p.Reason, "denied") {
		t.Errorf("policy.denied: %+v; want one, by the rule hello-policy", denied)
	}
}
