package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/events"
)

// servedEvents are the events a cliEventsReceiver took so far, for a
// test of serve, which delivers after answering: they come when they come.
type servedEvents struct {
	rc  *cliEventsReceiver
	all []events.Event
}

// wait returns the events of type typ and subject once n of them
// arrived (failing after 20 s).
func (s *servedEvents) wait(t *testing.T, typ, subject string, n int) []events.Event {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s.all = append(s.all, s.rc.take()...)
		var out []events.Event
		for _, e := range s.all {
			if e.Type == typ && e.Subject == subject {
				out = append(out, e)
			}
		}
		if len(out) >= n {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %s events for %s after 20 s, want %d; got %+v", len(out), typ, subject, n, s.all)
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
	rc := startCLIEventsReceiver(t, 0)
	got := &servedEvents{rc: rc}
	policyFile := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(policyFile, []byte(helloPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, pullThroughArgs(reg, origin, "--policy", policyFile, "--events-file", rc.file)...)
	tofu := testenv.Tofu(t, networkMirrorConfig(s))

	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "1.0.0")})
	if out := tofu.Run(t, dir, "init", "-input=false", "-no-color"); !strings.Contains(out, "Installed example.com/test/hello v1.0.0") {
		t.Fatalf("1.0.0 not installed:\n%s", out)
	}
	stored := waitForTag(t, reg, "pulled/example.com/test/hello", "1.0.0")
	ingested := got.wait(t, events.TypeVersionIngested, "example.com/test/hello@1.0.0", 1)
	d, ok := ingested[0].Data.(events.VersionIngested)
	if len(ingested) != 1 || !ok || d.Via != events.ViaPullThrough || d.Kind != events.KindProvider || d.Digest != stored ||
		d.Repository != reg.Host+"/pulled/example.com/test/hello" {
		t.Errorf("version.ingested: %+v (data %+v); want one, via pull-through, digest %s", ingested, ingested[0].Data, stored)
	}

	dir = testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "1.1.0")})
	if out, err := tofu.Try(t, dir, "init", "-input=false", "-no-color"); err == nil {
		t.Fatalf("tofu installed the denied 1.1.0:\n%s", out)
	}
	denied := got.wait(t, events.TypePolicyDenied, "example.com/test/hello@1.1.0", 1)
	p, ok := denied[0].Data.(events.PolicyDecision)
	if len(denied) != 1 || !ok || p.Rule != "hello-policy" || !strings.Contains(p.Reason, "denied") {
		t.Errorf("policy.denied: %+v; want one, by the rule hello-policy", denied)
	}
}
