package proxy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	pubrelease "github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/attesttest"
	"github.com/oci-tofu/oci-tofu/protocol/policyfile"
)

// A reload takes effect at the next request, though the documents built
// under the old policy are still fresh (a 30 s tag TTL); the decisions are
// counted by the rule names of the file in force (a dropped rule's series
// go), "default" for any address a client makes up; the reload metrics
// and the page follow the file, a broken one included.
func TestPolicyReload(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		pushAttested(t, repo, v, nil)
	}
	file := filepath.Join(t.TempDir(), "policy.hcl")
	write := func(src string) {
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`provider "example.com/test/*" { name = "all" }`)
	pf, err := policyfile.Open(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"),
		Policy: pf.Live(), PolicyStatus: pf.Status, RegistryHostname: "example.com"})

	var idx struct{ Versions map[string]any }
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &idx)
	if idx.Versions["1.1.0"] == nil {
		t.Fatalf("index.json before the reload: %v", idx.Versions)
	}
	p.getJSON(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 200, &struct{}{})
	if got := p.metric(t, `oci_tofu_policy_decisions_total{decision="allow",kind="provider",rule="all"}`); got == "" {
		t.Error("no allow decision of rule all counted")
	}

	write("provider \"example.com/test/*\" {\n  name = \"no-1.1.0\"\n  deny = [\"1.1.0\"]\n}\n")
	if err := pf.Reload("test"); err != nil {
		t.Fatal(err)
	}
	idx.Versions = nil
	p.getJSON(t, "/v1/mirror/example.com/test/hello/index.json", 200, &idx)
	if idx.Versions["1.1.0"] != nil || idx.Versions["1.0.0"] == nil {
		t.Errorf("index.json right after the reload: %v, want 1.0.0 only", idx.Versions)
	}
	p.wantError(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, `denied by the policy's rule "no-1.1.0"`)
	if got := p.metric(t, `oci_tofu_policy_decisions_total{decision="deny",kind="provider",rule="no-1.1.0"}`); got != "2" {
		t.Errorf("deny decisions of no-1.1.0: %q, want 2 (the listing's and the document's)", got)
	}
	if got := p.metric(t, `oci_tofu_policy_decisions_total{decision="allow",kind="provider",rule="all"}`); got != "" {
		t.Errorf("the dropped rule's series is still there: %s", got)
	}
	// Made-up addresses are decided by the default: no new label values.
	for i := 0; i < 20; i++ {
		p.get(t, fmt.Sprintf("/v1/mirror/example.com/evil%d/x%d/1.0.0.json", i, i))
	}
	checkPolicyLabels(t, p, "no-1.1.0", "default")

	if p.metric(t, "oci_tofu_policy_reloads_total") != "1" || p.metric(t, "oci_tofu_policy_file_current") != "1" || p.metric(t, "oci_tofu_policy_rules") != "1" {
		t.Errorf("reload metrics after a good reload: reloads %s, current %s", p.metric(t, "oci_tofu_policy_reloads_total"), p.metric(t, "oci_tofu_policy_file_current"))
	}
	write("provider \"example.com/test/*\" {\n  deny = [\"1.1.0\"\n}\n")
	if err := pf.Reload("test"); err == nil {
		t.Fatal("the broken file reloaded")
	}
	if p.metric(t, "oci_tofu_policy_reload_errors_total") != "1" || p.metric(t, "oci_tofu_policy_file_current") != "0" {
		t.Errorf("reload metrics after a broken file: errors %s, current %s", p.metric(t, "oci_tofu_policy_reload_errors_total"), p.metric(t, "oci_tofu_policy_file_current"))
	}
	p.wantError(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 404, `denied by the policy's rule "no-1.1.0"`)

	page := string(p.get(t, "/").Body)
	for _, want := range []string{
		`<section id="policy">`, `<dd id="policy-rules">1</dd>`, file + ":3:1:", "stays in force",
		`<td>provider <code>example.com/<wbr>test/<wbr>hello</code></td><td>1.1.0</td><td><code>no-1.1.0</code></td><td>example.com/test/hello 1.1.0 is denied by the policy&#39;s rule &#34;no-1.1.0&#34;</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// metric is the value of one series (its name and labels as exposed), or "".
func (p *proxy) metric(t *testing.T, series string) string {
	t.Helper()
	for _, line := range strings.Split(string(p.get(t, "/metrics").Body), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// checkPolicyLabels checks that every decision series has a closed kind
// and decision and one of rules.
func checkPolicyLabels(t *testing.T, p *proxy, rules ...string) {
	t.Helper()
	closed := map[string][]string{"kind": {"provider", "module", "tofu"}, "decision": {"allow", "deny"}, "rule": rules}
	label := regexp.MustCompile(`(\w+)="([^"]*)"`)
	for _, line := range strings.Split(string(p.get(t, "/metrics").Body), "\n") {
		if !strings.HasPrefix(line, "oci_tofu_policy_decisions_total{") {
			continue
		}
		for _, m := range label.FindAllStringSubmatch(line, -1) {
			if !slices.Contains(closed[m[1]], m[2]) {
				t.Errorf("label %s=%q is not from its closed set: %s", m[1], m[2], line)
			}
		}
	}
}

// A decision on facts (min_age here) is counted once, with its outcome:
// the version check that lets the rule read the facts is not counted
// too. The page shows the min_age denial with its reason.
func TestPolicyFactsCountedOnce(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	ours := attesttest.Signer(t)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	attestAt(t, repo, pushAttested(t, repo, "1.0.0", nil), ours, pubrelease.ProviderPredicateType, t0.Add(-100*time.Hour))
	attestAt(t, repo, pushAttested(t, repo, "1.1.0", nil), ours, pubrelease.ProviderPredicateType, t0)
	pol := factsPolicy(t, `
provider "example.com/test/*" {
  name     = "cool-down"
  min_age  = "3d"
  signers  = ["attestation:org.pub"]
}`, map[string]*attest.Signer{"org.pub": ours})
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), Policy: pol,
		RegistryHostname: "example.com", Now: newClock(t0.Add(time.Hour)).now})
	if vs := mirrorVersions(t, p, "/v1/mirror/example.com/test/hello/index.json"); len(vs) != 1 || vs["1.0.0"] == nil {
		t.Fatalf("index.json lists %v, want only 1.0.0", vs)
	}
	for series, want := range map[string]string{
		`oci_tofu_policy_decisions_total{decision="allow",kind="provider",rule="cool-down"}`: "1",
		`oci_tofu_policy_decisions_total{decision="deny",kind="provider",rule="cool-down"}`:  "1",
	} {
		if got := p.metric(t, series); got != want {
			t.Errorf("%s = %q, want %s", series, got, want)
		}
	}
	if page := string(p.get(t, "/").Body); !strings.Contains(page, `<td>1.1.0</td><td><code>cool-down</code></td><td>example.com/test/hello 1.1.0 entered the registry at 2026-11-01T12:00:00Z and is younger than min_age`) {
		t.Errorf("the page does not show the min_age denial:\n%s", page)
	}
}
