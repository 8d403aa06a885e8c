package proxy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// vulnFixtureDB is convert/vulns' fixture database (GO-2022-1059 affects
// golang.org/x/text v0.3.7).
const vulnFixtureDB = "../../convert/vulns/testdata/db"

// attachSBOMs stores an SBOM for each platform of version of repo whose
// provider executable was built with deps (and Go goVersion).
func attachSBOMs(t *testing.T, repo oci.Repository, version, goVersion string, deps ...sbom.Module) {
	t.Helper()
	ctx := context.Background()
	pv, err := oci.ResolveProvider(ctx, repo, names.MustParseVersion(version))
	if err != nil {
		t.Fatal(err)
	}
	for pl, m := range pv.Platforms {
		doc := &sbom.Document{Name: "example.com/test/hello", Version: version, Platform: pl.String(),
			FileName: "terraform-provider-hello_" + version + "_" + pl.String() + ".zip", ZipDigest: m.Digest, Created: time.Unix(0, 0),
			Executables: []sbom.Executable{{Name: "terraform-provider-hello_v" + version, SHA256: strings.Repeat("ab", 32), Size: 1,
				Go: &sbom.GoBuild{GoVersion: goVersion, Path: "example.com/terraform-provider-hello",
					Main: sbom.Module{Path: "example.com/terraform-provider-hello", Version: "(devel)"}, Deps: deps,
					Settings: map[string]string{"GOOS": pl.OS, "GOARCH": pl.Arch}}}}}
		b, err := doc.SPDX()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := sbom.Attach(ctx, repo, m.Digest, b, time.Unix(0, 0)); err != nil {
			t.Fatal(err)
		}
	}
}

// A vulnerabilities block decides on the SBOMs stored for each platform,
// matched against the database: deny leaves an affected version out (a
// request for it gets the IDs), missing = "deny" a version without an
// SBOM; warn lists it, the versions document warning of it; an allowed
// ID is never acted on. Without a database, such a policy does not start.
func TestPolicyVulnerabilities(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0-rc1"} {
		pushAttested(t, repo, v, nil)
	}
	xtext := sbom.Module{Path: "golang.org/x/text", Version: "v0.3.7", Sum: "h1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk="}
	attachSBOMs(t, repo, "1.0.0", "go1.27.5", xtext)
	attachSBOMs(t, repo, "1.1.0", "go1.27.5")
	// 2.0.0-rc1 has none.
	db, err := vulns.OpenLive(vulnFixtureDB, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	mappings := mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}")
	start := func(src string) *proxy {
		return startProxy(t, Options{ProviderMappings: mappings, Policy: mustPolicy(t, src), VulnDB: db, RegistryHostname: "example.com"})
	}
	listed := func(p *proxy) ([]string, []string) { return listedVersions(t, p) }

	deny := start(`
provider "example.com/test/hello" {
  name = "no-vulns"
  vulnerabilities {
    action  = "deny"
    ids     = ["GO-2022-1059"]
    missing = "deny"
  }
}`)
	const found = "GO-2022-1059 (CVE-2022-32149) in golang.org/x/text v0.3.7, fixed in v0.3.8"
	vs, warnings := listed(deny)
	if !slices.Equal(vs, []string{"1.1.0"}) {
		t.Errorf("deny lists %v, want 1.1.0 alone", vs)
	}
	if !containsWith(warnings, `1.0.0 is left out: example.com/test/hello 1.0.0 has known vulnerabilities the policy's rule "no-vulns" denies: `+found) ||
		!containsWith(warnings, `2.0.0-rc1 is left out: example.com/test/hello 2.0.0-rc1 has no SBOM stored for darwin_arm64, linux_amd64`) {
		t.Errorf("deny's warnings do not say why 1.0.0 and 2.0.0-rc1 are left out:\n%s", strings.Join(warnings, "\n"))
	}
	deny.wantError(t, "/v1/providers/test/hello/1.0.0/download/linux/amd64", 404, "has known vulnerabilities the policy's rule \"no-vulns\" denies: "+found)
	deny.wantError(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 404, found)
	deny.wantError(t, "/v1/mirror/example.com/test/hello/2.0.0-rc1.json", 404, `(vulnerabilities: missing = "deny")`)
	var mv networkMirrorVersion
	deny.getJSON(t, "/v1/mirror/example.com/test/hello/1.1.0.json", 200, &mv)

	warn := start(`
provider "example.com/test/hello" {
  vulnerabilities {
    action = "warn"
    ids    = ["cve-2022-32149"]
  }
}`)
	vs, warnings = listed(warn)
	if !slices.Equal(vs, []string{"1.0.0", "1.1.0", "2.0.0-rc1"}) {
		t.Errorf("warn lists %v, want every version", vs)
	}
	if want := []string{"version 1.0.0 of example.com/test/hello has known vulnerabilities: " + found}; !slices.Equal(warnings, want) {
		t.Errorf("warn's warnings:\n%s\nwant:\n%s", strings.Join(warnings, "\n"), strings.Join(want, "\n"))
	}
	var d struct{ Packages map[string]any }
	warn.getJSON(t, "/v1/providers/test/hello/1.0.0/download/linux/amd64", 200, &d) // served
	// The page marks the version; the metrics count the decision.
	if page := string(warn.get(t, "/").Body); !strings.Contains(page, "known vulnerabilities: ") || !strings.Contains(page, "GO-2022-1059") {
		t.Errorf("the page does not mark 1.0.0's known vulnerabilities")
	}
	if m := string(warn.get(t, "/metrics").Body); !strings.Contains(m, `oci_tofu_policy_vulnerable_decisions_total{decision="allow"}`) {
		t.Errorf("no vulnerable decisions counted:\n%s", grepLines(m, "vulnerable"))
	}
	if m := string(deny.get(t, "/metrics").Body); !strings.Contains(m, `oci_tofu_policy_vulnerable_decisions_total{decision="deny"}`) {
		t.Errorf("no denials of vulnerable versions counted:\n%s", grepLines(m, "vulnerable"))
	}

	// Every entry the database finds, allowed: nothing is acted on.
	var allowed []string
	pl, _ := names.ParsePlatform("linux_amd64")
	for _, f := range db.Current().MatchPlatform(pl.OS, pl.Arch, []vulns.Module{{Path: xtext.Path, Version: xtext.Version}, {Path: vulns.Stdlib, Version: "go1.27.5"}}) {
		allowed = append(allowed, `"`+f.ID+`"`)
	}
	if len(allowed) < 2 {
		t.Fatalf("the fixture finds %v in x/text v0.3.7", allowed)
	}
	accept := start(`
provider "example.com/test/hello" {
  vulnerabilities {
    action = "deny"
    allow  = [` + strings.Join(allowed, ", ") + `]
  }
}`)
	if vs, warnings = listed(accept); !slices.Equal(vs, []string{"1.0.0", "1.1.0", "2.0.0-rc1"}) || len(warnings) != 0 {
		t.Errorf("allow-list: lists %v, warnings %q; want every version, no warning", vs, warnings)
	}

	pol, err := policy.Parse([]byte(`provider "*/*/*" {
  vulnerabilities { action = "warn" }
}`), "policy.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{ProviderMappings: mappings, Policy: policy.NewLive(pol)}); err == nil || !strings.Contains(err.Error(), "--vuln-db") {
		t.Errorf("New without a database: %v, want an error naming --vuln-db", err)
	}
}

// A database reload takes effect at once, as a policy reload does: the
// documents built under the database in force before (cached for
// TagTTL) are not served under the new one. A database without
// GO-2022-1059 lists and serves 1.0.0; while the update is half written
// (the index naming the entry, the entry cut short) a check keeps the
// database in force; once the entry is whole and it is checked again,
// 1.0.0 is left out and refused, though the documents that listed and
// served it are still fresh.
func TestPolicyVulnerabilitiesDatabaseReload(t *testing.T) {
	dir, open := layoutStore(t)
	repo := open("test", "hello")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		pushAttested(t, repo, v, nil)
	}
	attachSBOMs(t, repo, "1.0.0", "go1.27.5", sbom.Module{Path: "golang.org/x/text", Version: "v0.3.7", Sum: "h1:olpwvP2KacW1ZWvsR7uQhoyTYvKAupfQrRGBFM352Gk="})
	attachSBOMs(t, repo, "1.1.0", "go1.27.5")

	// The database: nothing, then GO-2022-1059 (the index naming it
	// first, its entry written in two steps).
	dbDir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dbDir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("index/db.json", `{"modified": "2026-11-01T00:00:00Z"}`)
	write("index/modules.json", `[]`)
	db, err := vulns.OpenLive(dbDir, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, Options{ProviderMappings: mustMapping(t, "oci-layout:"+dir+"/${namespace}/${type}"), RegistryHostname: "example.com",
		Policy: mustPolicy(t, `
provider "example.com/test/hello" {
  name = "no-vulns"
  vulnerabilities {
    action = "deny"
    ids    = ["GO-2022-1059"]
  }
}`), VulnDB: db, Store: store.Options{TagTTL: time.Hour}})
	listed := func() []string {
		vs, _ := listedVersions(t, p)
		return vs
	}
	var d struct{ Packages map[string]any }
	var mv networkMirrorVersion
	if vs := listed(); !slices.Equal(vs, []string{"1.0.0", "1.1.0"}) {
		t.Fatalf("before the entry: lists %v", vs)
	}
	p.getJSON(t, "/v1/providers/test/hello/1.0.0/download/linux/amd64", 200, &d)
	p.getJSON(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 200, &mv)

	entry, err := os.ReadFile(filepath.Join(vulnFixtureDB, "ID", "GO-2022-1059.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The index written first, the entry half: the database in force
	// stays (a deny rule does not fail open), and the metrics say so.
	write("index/modules.json", `[{"path": "golang.org/x/text", "vulns": [{"id": "GO-2022-1059", "modified": "0001-01-01T00:00:00Z", "fixed": "0.3.8"}]}]`)
	write("index/db.json", `{"modified": "2026-11-05T23:49:57Z"}`)
	write("ID/GO-2022-1059.json", string(entry[:len(entry)/2]))
	if db.Check() {
		t.Fatal("a database whose entry is half written was put in force")
	}
	metrics := string(p.get(t, "/metrics").Body)
	for _, want := range []string{"oci_tofu_vuln_db_reload_errors_total 1", "oci_tofu_vuln_db_current 0", "oci_tofu_vuln_db_reloads_total 0"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q:\n%s", want, grepLines(metrics, "oci_tofu_vuln_db"))
		}
	}
	if page := string(p.get(t, "/").Body); !strings.Contains(page, `id="vuln-db-reload"`) || !strings.Contains(grepLines(page, "vuln-db-reload"), "reload failed") || !strings.Contains(page, "GO-2022-1059.json") {
		t.Errorf("the page does not show the failed reload:\n%s", grepLines(page, "vuln-db"))
	}
	// The entry written whole, the index unchanged: the next check takes it.
	write("ID/GO-2022-1059.json", string(entry))
	if !db.Check() {
		t.Fatal("the database was not reloaded")
	}
	if metrics := string(p.get(t, "/metrics").Body); !strings.Contains(metrics, "oci_tofu_vuln_db_current 1") || !strings.Contains(metrics, "oci_tofu_vuln_db_reloads_total 1") {
		t.Errorf("metrics after the reload:\n%s", grepLines(metrics, "oci_tofu_vuln_db"))
	}
	if page := string(p.get(t, "/").Body); !strings.Contains(grepLines(page, "vuln-db-reload"), "ok: the directory's current content is in force") {
		t.Errorf("the page after the reload:\n%s", grepLines(page, "vuln-db"))
	}
	const denied = `has known vulnerabilities the policy's rule "no-vulns" denies: GO-2022-1059 (CVE-2022-32149) in golang.org/x/text v0.3.7, fixed in v0.3.8`
	if vs := listed(); !slices.Equal(vs, []string{"1.1.0"}) {
		t.Errorf("after the reload: lists %v, want 1.1.0 alone", vs)
	}
	p.wantError(t, "/v1/providers/test/hello/1.0.0/download/linux/amd64", 404, denied)
	p.wantError(t, "/v1/mirror/example.com/test/hello/1.0.0.json", 404, denied)
}

// listedVersions are the versions of example.com/test/hello the registry
// protocol lists, sorted, and its warnings.
func listedVersions(t *testing.T, p *proxy) ([]string, []string) {
	t.Helper()
	var vd versionsDoc
	p.getJSON(t, "/v1/providers/test/hello/versions", 200, &vd)
	var vs []string
	for _, v := range vd.Versions {
		vs = append(vs, v.Version)
	}
	slices.Sort(vs)
	return vs, vd.Warnings
}
