package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// The demo provider's configuration (its source: testenv.DemoProviderSource).
const (
	sbomDemoConfig = `
terraform {
  required_providers {
    demo = {
      source  = "example.com/test/demo"
      version = "1.0.0"
    }
  }
}
`
)

type pushedSBOM struct {
	Platform, Manifest, Status, Referrer string
	Attested                             bool
}

// push provider --attest-key stores each platform's SBOM of a real Go
// provider, its modules those `go version -m` lists, dated by the
// signature; the real cosign verifies its attestation (--type spdxjson)
// in both forms; `regctl image copy --referrers` and `oras cp -r` keep
// the SBOMs; tofu
// still installs the version through oci_mirror and through serve. A
// version pushed with --no-sbom gets the same SBOMs from sbom --backfill,
// and a second backfill writes nothing.
func TestSBOMPushAttestCopyBackfill(t *testing.T) {
	signed := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	dir, bins := sbomDemoRelease(t, signed)
	reg := testenv.StartRegistry(t)
	key, pub := ecdsaKeyPair(t)
	gpgKey := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	repo := reg.Host + "/providers/test/demo"

	out := mustRun(t, "push", "provider", "--json", "--key", gpgKey, "--attest-key", key, dir, repo)
	var res struct {
		Digest string
		SBOMs  []pushedSBOM `json:"sboms"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(res.SBOMs) != len(sbomDemoPlatforms) {
		t.Fatalf("sboms: %+v", res.SBOMs)
	}
	manifests := map[string]string{}
	for _, s := range res.SBOMs {
		if s.Status != "written" || !s.Attested || s.Referrer == "" {
			t.Errorf("%+v", s)
		}
		manifests[s.Platform] = s.Manifest
	}

	spdxOf := func(ref, platform string) []byte {
		t.Helper()
		return []byte(mustRun(t, "sbom", "--platform", platform, ref))
	}
	pushed := map[string][]byte{}
	for _, p := range sbomDemoPlatforms {
		b := spdxOf(repo+":1.0.0", p)
		doc, err := sbom.ParseSPDX(b)
		if err != nil {
			t.Fatalf("%s: %v\n%s", p, err, b)
		}
		pushed[p] = b
		if len(doc.Executables) != 1 || doc.Executables[0].Go == nil || !doc.Created.Equal(signed) {
			t.Fatalf("%s: %+v", p, doc)
		}
		if got, want := testenv.ModuleLines(doc.Executables[0].Go.BuildInfo().String()), testenv.GoVersionM(t, bins[p]); !slices.Equal(got, want) {
			t.Errorf("%s: SBOM modules\n%s\nwant (go version -m)\n%s", p, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		ref := repo + "@" + manifests[p]
		for name, verify := range map[string]func(t *testing.T, pub, ref, predicateType string) (string, error){
			"bundles": cosignVerifyAttestationType, "tag schema": cosignVerifyAttestationTagSchema,
		} {
			out, err := verify(t, pub, ref, "spdxjson")
			if err != nil {
				t.Fatalf("%s: cosign verify-attestation --type spdxjson (%s): %v\n%s", p, name, err, out)
			}
			if st := attestedStatement(t, out); st.PredicateType != sbom.SPDXPredicateType {
				t.Errorf("%s: predicate type %s", p, st.PredicateType)
			}
		}
	}
	summary := mustRun(t, "sbom", "--summary", repo+":1.0.0")
	if !strings.Contains(summary, "main module example.com/terraform-provider-demo@(devel)") || !strings.Contains(summary, "linux_amd64") || !strings.Contains(summary, "darwin_arm64") {
		t.Errorf("--summary:\n%s", summary)
	}
	if out, err := run(t, "sbom", repo+":1.0.0"); err == nil || !strings.Contains(out, "--platform") {
		t.Errorf("two platforms, no --platform: %v\n%s", err, out)
	}

	// A re-push writes no SBOM.
	out = mustRun(t, "push", "provider", "--json", "--key", gpgKey, dir, repo)
	if strings.Contains(out, `"written"`) || strings.Count(out, `"present"`) != len(sbomDemoPlatforms) {
		t.Errorf("re-push:\n%s", out)
	}

	// regctl image copy --referrers keeps them.
	copied := reg.Host + "/copy/test/demo"
	testenv.MustRun(t, "", copyEnv(t, reg), testenv.Tool(t, "regctl"), "image", "copy", "--referrers", "--digest-tags", repo+":1.0.0", copied+":1.0.0")
	for _, p := range sbomDemoPlatforms {
		if got := spdxOf(copied+":1.0.0", p); string(got) != string(pushed[p]) {
			t.Errorf("%s: the copy's SBOM differs", p)
		}
		if out, err := cosignVerifyAttestationType(t, pub, copied+"@"+manifests[p], "spdxjson"); err != nil {
			t.Errorf("%s: on the copy: %v\n%s", p, err, out)
		}
	}

	// So does oras cp -r.
	orased := reg.Host + "/oras/test/demo"
	ca := reg.CA.CertFile
	mustOras(t, "cp", "--no-tty", "-r", "--from-plain-http=false", "--from-ca-file", ca, "--to-plain-http=false", "--to-ca-file", ca, repo+":1.0.0", orased+":1.0.0")
	for _, p := range sbomDemoPlatforms {
		if got := spdxOf(orased+":1.0.0", p); string(got) != string(pushed[p]) {
			t.Errorf("%s: the oras copy's SBOM differs", p)
		}
	}

	// tofu installs it, through oci_mirror and through serve.
	tf := testenv.WriteConfig(t, map[string]string{"main.tf": sbomDemoConfig})
	if out := testenv.Tofu(t, ociMirrorConfig(reg.Host)).Run(t, tf, "init", "-input=false", "-no-color"); !strings.Contains(out, "Installed example.com/test/demo v1.0.0") {
		t.Errorf("oci_mirror:\n%s", out)
	}
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}")
	tf = testenv.WriteConfig(t, map[string]string{"main.tf": sbomDemoConfig})
	if out := testenv.Tofu(t, networkMirrorConfig(s)).Run(t, tf, "init", "-input=false", "-no-color"); !strings.Contains(out, "Installed example.com/test/demo v1.0.0") {
		t.Errorf("serve:\n%s", out)
	}

	// Pushed without SBOMs: backfill adds the same ones, then nothing.
	bare := reg.Host + "/bare/test/demo"
	out = mustRun(t, "push", "provider", "--json", "--no-sbom", "--key", gpgKey, dir, bare)
	if !strings.Contains(out, `"sboms": []`) {
		t.Errorf("--no-sbom:\n%s", out)
	}
	if out, err := run(t, "sbom", "--platform", "linux_amd64", bare+":1.0.0"); err == nil || !strings.Contains(out, "no SBOM is stored") {
		t.Errorf("before backfill: %v\n%s", err, out)
	}
	for run, want := range []string{"written", "present"} {
		out := mustRun(t, "sbom", "--backfill", "--json", bare)
		var bf struct {
			Written int
			Results []struct{ Platform, Status string }
		}
		if err := json.Unmarshal([]byte(out), &bf); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if len(bf.Results) != len(sbomDemoPlatforms) || bf.Written != map[bool]int{true: 2}[run == 0] {
			t.Fatalf("backfill %d: %s", run, out)
		}
		for _, r := range bf.Results {
			if r.Status != want {
				t.Errorf("backfill %d: %+v", run, r)
			}
		}
	}
	if human := mustRun(t, "sbom", "--backfill", bare); !strings.Contains(human, "nothing written") {
		t.Errorf("a backfill with nothing to do:\n%s", human)
	}
	for _, p := range sbomDemoPlatforms {
		if got := spdxOf(bare+":1.0.0", p); string(got) != string(pushed[p]) {
			t.Errorf("%s: the backfilled SBOM differs from the pushed one", p)
		}
	}
}
