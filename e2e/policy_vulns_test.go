package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// The demo provider's configuration: source and version constraint.
const demoConfig = `
terraform {
  required_providers {
    demo = {
      source  = "%s"
      version = "%s"
    }
  }
}
`

// What the fixture database finds in the demo provider's x/text, as the
// policy's warnings and denials name it.
const demoFinding = "GO-2022-1059 (CVE-2022-32149) in golang.org/x/text v0.3.7, fixed in v0.3.8"

// serve --vuln-db with a vulnerabilities block reaches real clients. The
// demo provider (built once: it links golang.org/x/text v0.3.7, affected
// by GO-2022-1059) is pushed as 1.0.0 with its SBOMs and as 1.1.0 with
// --no-sbom. Through the registry protocol tofu and terraform install
// 1.0.0 when the policy warns of it and print the warning; when it
// denies it, init fails printing the warning naming the entry (the
// versions document still lists 1.1.0: with every version denied it
// would be 404, whose reasons the clients do not print), and tofu
// through the network mirror fails too; allow lets it install.
// missing = "deny" refuses 1.1.0, saying it has no SBOM. A serve whose
// database lacks the entry installs 1.0.0 until the entry is written
// into the database and SIGHUP reloads it.
func TestPolicyVulnerabilitiesReachClients(t *testing.T) {
	signed := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	bins := demoProviderBinaries(t)
	reg := testenv.StartRegistry(t)
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	repo := reg.Host + "/providers/test/demo"
	mustRun(t, "push", "provider", "--quiet", "--key", key, demoProviderRelease(t, bins, "1.0.0", signed), repo)
	mustRun(t, "push", "provider", "--quiet", "--no-sbom", "--key", key, demoProviderRelease(t, bins, "1.1.0", signed), repo)
	template := reg.Host + "/providers/${namespace}/${type}"

	file := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(file, []byte(vulnsPolicy(`action = "warn"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--provider-template", template, "--policy", file, "--vuln-db", vulnFixtureDB(t))
	demo := s.Host + "/test/demo"
	reloads := 0
	setPolicy := func(t *testing.T, block string) {
		t.Helper()
		renameWrite(t, file, vulnsPolicy(block))
		reloads++
		want := fmt.Sprint(reloads)
		pollUntil(t, "the policy reload", func() bool { return metric(t, s, "oci_tofu_policy_reloads_total") == want })
	}
	// tfInit runs init for source at version through the registry
	// protocol: the output, flattened too (the clients wrap warnings).
	tfInit := func(t *testing.T, c cliFactory, source, version string) (string, string, error) {
		t.Helper()
		tf := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(demoConfig, source, version)})
		out, err := c(t, "").Try(t, tf, "init", "-input=false", "-no-color")
		return out, strings.Join(strings.Fields(out), " "), err
	}

	t.Run("warn", func(t *testing.T) {
		for _, c := range clis {
			t.Run(c.name, func(t *testing.T) {
				out, flat, err := tfInit(t, c.new, demo, "1.0.0")
				if err != nil || !strings.Contains(out, "Installed "+demo+" v1.0.0") ||
					!strings.Contains(flat, "Additional provider information from registry") ||
					!strings.Contains(flat, "version 1.0.0 of "+demo+" has known vulnerabilities: "+demoFinding) {
					t.Errorf("%s init does not install 1.0.0 and warn of GO-2022-1059: %v\n%s", c.name, err, out)
				}
			})
		}
	})

	t.Run("deny", func(t *testing.T) {
		// ids by an alias, in another case: the entry is matched by any.
		setPolicy(t, `action = "deny"
    ids    = ["cve-2022-32149"]`)
		denial := `has known vulnerabilities the policy's rule "demo-vulns" denies: ` + demoFinding
		for _, c := range clis {
			t.Run(c.name, func(t *testing.T) {
				out, flat, err := tfInit(t, c.new, demo, "1.0.0")
				if err == nil || strings.Contains(out, "Installed "+demo) || !strings.Contains(flat, "no available releases match") ||
					!strings.Contains(flat, "1.0.0 is left out: localhost/test/demo 1.0.0 "+denial) {
					t.Errorf("%s init does not refuse 1.0.0 naming GO-2022-1059: %v\n%s", c.name, err, out)
				}
			})
		}
		// The network mirror protocol has no field for the reason: tofu
		// finds no 1.0.0 in index.json; the version's document is 404
		// with the reason (what tofu's debug log shows).
		t.Run("network mirror", func(t *testing.T) {
			tf := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(demoConfig, "example.com/test/demo", "1.0.0")})
			out, err := testenv.Tofu(t, networkMirrorConfig(s)).Try(t, tf, "init", "-input=false", "-no-color")
			if err == nil || strings.Contains(out, "Installed example.com/test/demo") || !strings.Contains(out, "no available releases match") {
				t.Errorf("tofu init through the network mirror does not refuse 1.0.0: %v\n%s", err, out)
			}
			if code, body := s.get(t, "/v1/mirror/example.com/test/demo/1.0.0.json"); code != 404 || !strings.Contains(string(body), demoFinding) {
				t.Errorf("1.0.0.json: %d %s", code, body)
			}
			if code, body := s.get(t, "/v1/mirror/example.com/test/demo/index.json"); code != 200 || strings.Contains(string(body), "1.0.0") || !strings.Contains(string(body), "1.1.0") {
				t.Errorf("index.json: %d %s", code, body)
			}
		})
		t.Run("allowed", func(t *testing.T) {
			setPolicy(t, `action = "deny"
    ids    = ["cve-2022-32149"]
    allow  = ["GO-2022-1059"]`)
			if out, flat, err := tfInit(t, testenv.Tofu, demo, "1.0.0"); err != nil || !strings.Contains(out, "Installed "+demo+" v1.0.0") || strings.Contains(flat, "GO-2022-1059") {
				t.Errorf("tofu init does not install the allowed 1.0.0 without a warning: %v\n%s", err, out)
			}
		})
	})

	// 1.0.0 is warned of, so listed: 1.1.0 without an SBOM is the one
	// missing decides.
	t.Run("missing", func(t *testing.T) {
		setPolicy(t, `action  = "warn"
    missing = "deny"`)
		out, flat, err := tfInit(t, testenv.Tofu, demo, "1.1.0")
		if err == nil || strings.Contains(out, "Installed "+demo) ||
			!strings.Contains(flat, `1.1.0 is left out: localhost/test/demo 1.1.0 has no SBOM stored for darwin_arm64, linux_amd64, and the policy's rule "demo-vulns" denies versions without one (vulnerabilities: missing = "deny")`) {
			t.Errorf("tofu init does not refuse 1.1.0, which has no SBOM: %v\n%s", err, out)
		}
		setPolicy(t, `action  = "warn"
    missing = "allow"`)
		if out, _, err := tfInit(t, testenv.Tofu, demo, "1.1.0"); err != nil || !strings.Contains(out, "Installed "+demo+" v1.1.0") {
			t.Errorf("tofu init does not install 1.1.0, which has no SBOM: %v\n%s", err, out)
		}
	})

	// A database without GO-2022-1059: the deny policy installs 1.0.0;
	// with the entry written in and SIGHUP, a fresh init is refused.
	t.Run("database reload", func(t *testing.T) {
		db := vulnDBWithout(t, "GO-2022-1059")
		file := filepath.Join(t.TempDir(), "policy.hcl")
		if err := os.WriteFile(file, []byte(vulnsPolicy(`action = "deny"
    ids    = ["GO-2022-1059"]`)), 0o644); err != nil {
			t.Fatal(err)
		}
		s := startServe(t, "--provider-template", template, "--policy", file, "--vuln-db", db)
		demo := s.Host + "/test/demo"
		if out, _, err := tfInit(t, testenv.Tofu, demo, "1.0.0"); err != nil || !strings.Contains(out, "Installed "+demo+" v1.0.0") {
			t.Fatalf("tofu init does not install 1.0.0 before the database has GO-2022-1059: %v\n%s", err, out)
		}
		vulnDBAdd(t, db, "GO-2022-1059")
		start := time.Now()
		s.cmd.Process.Signal(syscall.SIGHUP)
		pollUntil(t, "the database reload in the log", func() bool { return strings.Contains(s.logs.String(), `msg="vulnerability database reloaded"`) })
		// Reloaded: what was decided under the old database is not used.
		out, flat, err := tfInit(t, testenv.Tofu, demo, "1.0.0")
		if err == nil || strings.Contains(out, "Installed "+demo) || !strings.Contains(flat, `denies: `+demoFinding) {
			t.Errorf("tofu init after the database reload does not refuse 1.0.0: %v\n%s", err, out)
		}
		t.Logf("refused %v after SIGHUP", time.Since(start).Round(time.Millisecond))
	})
}

// vulnsPolicy is a policy whose one rule, "demo-vulns", matches every
// provider address with the vulnerabilities block holding block.
func vulnsPolicy(block string) string {
	return `provider "*/*/*" {
  name = "demo-vulns"
  vulnerabilities {
    ` + block + `
  }
}
`
}

// vulnDBWithout is a copy of the fixture database without entry id: its
// ID file left out, its index files (db.json, modules.json, vulns.json)
// without it and dated earlier, as the database was before id was
// published.
func vulnDBWithout(t *testing.T, id string) string {
	t.Helper()
	from, dir := vulnFixtureDB(t), t.TempDir()
	for _, sub := range []string{"ID", "index"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := filepath.Glob(filepath.Join(from, "ID", "*.json"))
	if err != nil || len(entries) == 0 {
		t.Fatalf("no fixture entries: %v", err)
	}
	for _, e := range entries {
		if filepath.Base(e) != id+".json" {
			copyFile(t, e, filepath.Join(dir, "ID", filepath.Base(e)))
		}
	}
	var modules []struct {
		Path  string           `json:"path"`
		Vulns []map[string]any `json:"vulns"`
	}
	readJSONFile(t, filepath.Join(from, "index", "modules.json"), &modules)
	kept := modules[:0]
	for _, m := range modules {
		vs := m.Vulns[:0]
		for _, v := range m.Vulns {
			if v["id"] != id {
				vs = append(vs, v)
			}
		}
		if m.Vulns = vs; len(vs) > 0 {
			kept = append(kept, m)
		}
	}
	var summaries []map[string]any
	readJSONFile(t, filepath.Join(from, "index", "vulns.json"), &summaries)
	var keptSummaries []map[string]any
	for _, v := range summaries {
		if v["id"] != id {
			keptSummaries = append(keptSummaries, v)
		}
	}
	writeJSONFile(t, filepath.Join(dir, "index", "modules.json"), kept)
	writeJSONFile(t, filepath.Join(dir, "index", "vulns.json"), keptSummaries)
	writeJSONFile(t, filepath.Join(dir, "index", "db.json"), map[string]string{"modified": "2026-11-01T00:00:00Z"})
	return dir
}

// vulnDBAdd adds the fixture's entry id to the database in dir made by
// vulnDBWithout, as the database's publisher does: the entry first, then
// the fixture's index files (which list it), each renamed into place.
func vulnDBAdd(t *testing.T, dir, id string) {
	t.Helper()
	from := vulnFixtureDB(t)
	for _, name := range []string{"ID/" + id + ".json", "index/vulns.json", "index/modules.json", "index/db.json"} {
		to := filepath.Join(dir, name)
		copyFile(t, filepath.Join(from, name), to+".new")
		if err := os.Rename(to+".new", to); err != nil {
			t.Fatal(err)
		}
	}
}
