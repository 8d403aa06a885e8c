package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/sbom"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// vulnsResult is what `vulns --json` prints.
type vulnsResult struct {
	Repositories []struct {
		Repository string `json:"repository"`
		Versions   []struct {
			Version   string `json:"version"`
			Platforms []struct {
				Platform string `json:"platform"`
				SBOM     bool   `json:"sbom"`
				Findings []struct {
					ID      string `json:"id"`
					Module  string `json:"module"`
					Version string `json:"version"`
					Fixed   string `json:"fixed"`
				} `json:"findings"`
			} `json:"platforms"`
		} `json:"versions"`
	} `json:"repositories"`
	Totals struct {
		Versions          int `json:"versions"`
		Platforms         int `json:"platforms"`
		AffectedVersions  int `json:"affected_versions"`
		AffectedPlatforms int `json:"affected_platforms"`
		WithoutSBOM       int `json:"platforms_without_sbom"`
	} `json:"totals"`
}

// `oci-tofu vulns` against Distribution: a provider version whose
// linux_amd64 SBOM describes a binary linking golang.org/x/text v0.3.7
// and an old golang.org/x/net is reported with the same (entry, module)
// pairs `govulncheck -mode binary -scan module` finds in that binary,
// against the same database; its other platforms, and another version,
// are listed as having no SBOM.
func TestVulnsAgreesWithGovulncheck(t *testing.T) {
	testenv.Tool(t, "govulncheck") // before building anything: `make tools` if missing
	dbDir := vulnFixtureDB(t)
	bin := filepath.Join(t.TempDir(), "terraform-provider-hello_v1.0.0")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Dir = filepath.Join(testenv.Root(t), "convert", "vulns", "testdata", "probe")
	build.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false", "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the probe: %v\n%s", err, out)
	}

	reg := testenv.StartRegistry(t)
	repo := reg.Host + "/providers/test/hello"
	for _, v := range []string{"1.0.0", "1.1.0"} {
		// Without the SBOMs push stores, so that only the probe's is there.
		mustRun(t, "push", "provider", "--no-sbom", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), testenv.Testdata(t, "providers", "hello", v), repo)
	}
	r := registryRepo(t, reg, "providers/test/hello")
	ctx := context.Background()
	pv, err := oci.ResolveProvider(ctx, r, names.MustParseVersion("1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	linux, _ := names.ParsePlatform("linux_amd64")
	m, ok := pv.Platforms[linux]
	if !ok {
		t.Fatalf("1.0.0 has no linux_amd64: %v", pv.Platforms)
	}
	zipped := zipOf(t, bin)
	doc, err := sbom.FromZip(bytes.NewReader(zipped), int64(len(zipped)), sbom.Options{Name: "example.com/test/hello", Version: "1.0.0", Platform: "linux_amd64"})
	if err != nil {
		t.Fatal(err)
	}
	spdx, err := doc.SPDX()
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := sbom.Attach(ctx, r, m.Digest, spdx, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}

	out := mustRun(t, "vulns", "--json", "--vuln-db", dbDir, repo)
	var res vulnsResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("vulns --json: %v\n%s", err, out)
	}
	ours := map[string]bool{}
	var missing []string
	for _, v := range res.Repositories[0].Versions {
		for _, p := range v.Platforms {
			if !p.SBOM {
				missing = append(missing, v.Version+" "+p.Platform)
			}
			for _, f := range p.Findings {
				if v.Version != "1.0.0" || p.Platform != "linux_amd64" {
					t.Errorf("a finding for %s %s: %+v", v.Version, p.Platform, f)
				}
				ours[f.ID+" "+f.Module+" "+f.Fixed] = true
			}
		}
	}
	theirs := govulncheckModules(t, dbDir, bin)
	if len(theirs) < 3 || !mapsEqual(ours, theirs) {
		t.Errorf("findings (entry module fixed):\noci-tofu vulns:\n%s\ngovulncheck:\n%s", vulnKeys(ours), vulnKeys(theirs))
	}
	total := len(pv.Platforms) * 2
	if len(missing) != total-1 || slices.Contains(missing, "1.0.0 linux_amd64") {
		t.Errorf("platforms without an SBOM: %v, want the %d but 1.0.0 linux_amd64", missing, total-1)
	}
	if tt := res.Totals; tt.Versions != 2 || tt.Platforms != total || tt.AffectedVersions != 1 || tt.AffectedPlatforms != 1 || tt.WithoutSBOM != total-1 {
		t.Errorf("totals %+v", tt)
	}
	if _, err := run(t, "vulns", "--quiet", "--exit-code", "--vuln-db", dbDir, repo); exitCode(t, err) != 3 {
		t.Errorf("vulns --exit-code with an affected version: %v, want exit status 3", err)
	}
	plain := reg.Host + "/providers/other/hello"
	mustRun(t, "push", "provider", "--quiet", "--no-sbom", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), testenv.Testdata(t, "providers", "hello", "1.1.0"), plain)
	if _, err := run(t, "vulns", "--quiet", "--exit-code", "--vuln-db", dbDir, plain); exitCode(t, err) != 4 {
		t.Errorf("vulns --exit-code, unaffected but without SBOMs: %v, want exit status 4", err)
	}
	if _, err := run(t, "vulns", "--quiet", "--vuln-db", dbDir, repo); err != nil {
		t.Errorf("vulns without --exit-code: %v, want exit status 0", err)
	}
	human := mustRun(t, "vulns", "--vuln-db", dbDir, repo)
	if !strings.Contains(human, "GO-2022-1059 (CVE-2022-32149) in golang.org/x/text v0.3.7, fixed in v0.3.8") || !strings.Contains(human, "1.1.0            linux_amd64      no SBOM") {
		t.Errorf("vulns:\n%s", human)
	}
}

// zipOf is a provider zip holding the file at path.
func zipOf(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: filepath.Base(path), Method: zip.Deflate})
	if err == nil {
		_, err = w.Write(b)
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// govulncheckModules are the "entry module fixed" govulncheck finds in
// bin at the module level, against the database in dbDir.
func govulncheckModules(t *testing.T, dbDir, bin string) map[string]bool {
	t.Helper()
	found := map[string]bool{}
	for _, f := range testenv.Govulncheck(t, dbDir, bin) {
		if len(f.Trace) > 0 {
			found[f.OSV+" "+f.Trace[0].Module+" "+f.FixedVersion] = true
		}
	}
	return found
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func vulnKeys(m map[string]bool) string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	slices.Sort(k)
	return strings.Join(k, "\n")
}
