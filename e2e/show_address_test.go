package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// showPolicy warns of the demo provider's known vulnerabilities and
// denies its 1.2.0.
const showPolicy = `provider "*/*/*" {
  name = "demo-rule"
  deny = ["1.2.0"]
  vulnerabilities {
    action = "warn"
  }
}
`

// show ADDRESS with the real binary against Distribution: the demo
// provider (1.0.0 with SBOMs, linking golang.org/x/text v0.3.7, which
// the fixture database finds; 1.1.0 without; 1.2.0, which the policy
// denies) and a module pushed by push module. show --json of a provider
// version is the JSON page serve's catalogue answers for it, with the
// same template, policy and database (downloads aside); the text names
// the newest served version and each version's verdict; a denied
// version, an unknown address and a bad address fail, saying what was
// looked for.
func TestShowAddresses(t *testing.T) {
	isolateCache(t)
	signed := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	bins := demoProviderBinaries(t)
	reg := testenv.StartRegistry(t)
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	repo := reg.Host + "/providers/test/demo"
	mustRun(t, "push", "provider", "--quiet", "--key", key, demoProviderRelease(t, bins, "1.0.0", signed), repo)
	for _, v := range []string{"1.1.0", "1.2.0"} {
		mustRun(t, "push", "provider", "--quiet", "--no-sbom", "--key", key, demoProviderRelease(t, bins, v, signed), repo)
	}
	tpl := reg.Host + "/providers/${namespace}/${type}"
	pol := filepath.Join(t.TempDir(), "policy.hcl")
	if err := os.WriteFile(pol, []byte(showPolicy), 0o644); err != nil {
		t.Fatal(err)
	}
	db := vulnFixtureDB(t)
	s := startServe(t, "--provider-template", tpl, "--policy", pol, "--vuln-db", db, "--registry-hostname", "example.com")
	showArgs := []string{"show", "--provider-template", tpl, "--policy", pol, "--vuln-db", db}

	t.Run("provider json is the catalogue's page", func(t *testing.T) {
		cli := decodeJSON(t, mustRun(t, append(showArgs, "--json", "example.com/test/demo@1.0.0")...))
		code, body := s.get(t, "/catalog/providers/example.com/test/demo/1.0.0?format=json")
		if code != 200 {
			t.Fatalf("the catalogue's page: %d %s", code, body)
		}
		page := decodeJSON(t, string(body))
		if cli["downloads"] != nil {
			t.Errorf("show --json has downloads: %v", cli["downloads"])
		}
		delete(cli, "downloads")
		delete(page, "downloads")
		if !reflect.DeepEqual(cli, page) {
			a, _ := json.MarshalIndent(cli, "", " ")
			b, _ := json.MarshalIndent(page, "", " ")
			t.Errorf("show --json differs from the catalogue's page:\n%s\n---\n%s", a, b)
		}
		for _, want := range []string{`"status":"warned"`, `"id":"GO-2022-1059"`, `"stored":true`, `"hashes":["h1:`, `"key_ids":["`} {
			if b, _ := json.Marshal(cli); !strings.Contains(string(b), want) {
				t.Errorf("show --json lacks %s:\n%s", want, b)
			}
		}
	})

	t.Run("provider text", func(t *testing.T) {
		out := mustRun(t, append(showArgs, "example.com/test/demo")...)
		for _, want := range []string{"Provider example.com/test/demo 1.1.0 (the newest served)", "  1.2.0  denied (", `"demo-rule"`,
			"  1.0.0  warned: ", "Publisher keys:", "zh:", "SBOM: none"} {
			if !strings.Contains(out, want) {
				t.Errorf("show lacks %q:\n%s", want, out)
			}
		}
		out = mustRun(t, append(showArgs, "example.com/test/demo@1.0.0")...)
		for _, want := range []string{"Provider example.com/test/demo 1.0.0 (the newest served is 1.1.0)", "Known vulnerabilities (database ", "GO-2022-1059  golang.org/x/text v0.3.7 (fixed in v0.3.8)", "SBOM: go"} {
			if !strings.Contains(out, want) {
				t.Errorf("show @1.0.0 lacks %q:\n%s", want, out)
			}
		}
	})

	t.Run("refused", func(t *testing.T) {
		for arg, wants := range map[string][]string{
			"example.com/test/demo@1.2.0": {"show provider example.com/test/demo@1.2.0", `"demo-rule"`, "denied"},
			"example.com/test/nope":       {"show provider example.com/test/nope (repository " + reg.Host + "/providers/test/nope)"},
			"test/de mo":                  {`address "test/de mo"`, "want [HOST/]NAMESPACE/TYPE"},
		} {
			out, err := run(t, append(showArgs, arg)...)
			if err == nil {
				t.Errorf("show %s: exit status 0\n%s", arg, out)
			}
			for _, want := range wants {
				if !strings.Contains(out, want) {
					t.Errorf("show %s lacks %q:\n%s", arg, want, out)
				}
			}
		}
	})

	t.Run("module", func(t *testing.T) {
		mrepo := reg.Host + "/modules/acme/features/aws"
		for _, v := range []string{"1.0.0", "1.1.0"} {
			mustRun(t, "push", "module", featuresModule(t), mrepo+":"+v)
		}
		margs := []string{"show", "--module-template", reg.Host + "/modules/${namespace}/${name}/${system}"}
		out := mustRun(t, append(margs, "acme/features/aws")...)
		for _, want := range []string{"Module registry.opentofu.org/acme/features/aws 1.1.0 (the newest served)", "Interface:  stored", "  1.1.0  served\n  1.0.0  served", "Root module (README.md)", "modules/network"} {
			if !strings.Contains(out, want) {
				t.Errorf("show lacks %q:\n%s", want, out)
			}
		}
		out = mustRun(t, append(margs, "--json", "registry.opentofu.org/acme/features/aws@1.0.0")...)
		if m := decodeJSON(t, out); m["version"] != "1.0.0" || m["latest"] != "1.1.0" || m["module"] == nil {
			t.Errorf("show --json @1.0.0:\n%s", out)
		}
	})
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return m
}
