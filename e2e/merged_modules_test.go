package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// pushGreetingAs pushes the greeting fixture under version tags of repo,
// each copy greeting with "Hello from LABEL VERSION, ": the installed
// package tells which copy of which version was picked.
func pushGreetingAs(t *testing.T, repo, label string, versions ...string) {
	t.Helper()
	for _, v := range versions {
		dir := filepath.Join(t.TempDir(), "greeting")
		testenv.MustRun(t, "", nil, "cp", "-r", testenv.Testdata(t, "modules", "greeting"), dir)
		main := filepath.Join(dir, "main.tf")
		b, err := os.ReadFile(main)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(main, []byte(strings.Replace(string(b), `"Hello, `, `"Hello from `+label+" "+v+`, `, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, "push", "module", "--quiet", dir, repo+":"+v)
	}
}

const mergedModulesConfig = `
module "pick" {
  source  = "%[1]s/acme/greeting/aws"
  version = "~> 1.0"
}

module "conflict" {
  source  = "%[1]s/acme/greeting/aws"
  version = "1.2.0"
}
%[2]s`

// mergedSources are two sources of one provider (oci_mirror blocks of a
// --config, as TestServeConfigMergesBlocksAsTofu: 1.0.0 in both with
// different builds, 1.1.0 in the second) and of one module
// (moduleSources), in one registry; cfg is the CLI configuration holding
// the blocks.
func mergedSources(t *testing.T) (cfg string, modules []string) {
	t.Helper()
	reg := testenv.StartRegistry(t)
	key := testenv.Testdata(t, "keys", "gocrypto-signer.asc")
	pushProvider := func(dir, repo string) {
		mustRun(t, "push", "provider", "--quiet", "--key", key, dir, reg.Host+"/"+repo+"/example.com/acme/widgets")
	}
	pushProvider(signedProviderDir(t, "widgets", "1.0.0"), "first")
	pushProvider(variantProviderDir(t, "widgets", "1.0.0"), "second")
	pushProvider(signedProviderDir(t, "widgets", "1.1.0"), "second")
	cfg = fmt.Sprintf(`
provider_installation {
  oci_mirror {
    repository_template = "%[1]s/first/${hostname}/${namespace}/${type}"
    include             = ["example.com/acme/*"]
  }
  oci_mirror {
    repository_template = "%[1]s/second/${hostname}/${namespace}/${type}"
  }
}
`, reg.Host)
	return cfg, moduleSources(t, reg)
}

// moduleSources are two module templates of other shapes: 1.0.0 and 1.2.0
// in the first, another 1.2.0, 1.3.0 and 2.0.0 in the second.
func moduleSources(t *testing.T, reg *testenv.Registry) []string {
	t.Helper()
	pushGreetingAs(t, reg.Host+"/modules/acme/greeting/aws", "first", "1.0.0", "1.2.0")
	pushGreetingAs(t, reg.Host+"/more/aws/acme-greeting", "second", "1.2.0", "1.3.0", "2.0.0")
	return []string{reg.Host + "/modules/${namespace}/${name}/${system}", reg.Host + "/more/${system}/${namespace}-${name}"}
}

// One serve process merges two sources of a provider and two of a
// module. Real tofu and terraform install through it: the module
// constraint "~> 1.0" picks the newest version across both module
// templates (1.3.0, the second's), the conflicting 1.2.0 is the first
// template's package, and the provider's conflicting 1.0.0 is the first
// block's, as tofu installs it reading the same blocks itself (the
// oracle).
func TestServeMergesProviderAndModuleSources(t *testing.T) {
	isolateCache(t)
	cfg, modules := mergedSources(t)
	file := filepath.Join(t.TempDir(), "tofu.rc")
	if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, "--config", file, "--module-template", modules[0], "--module-template", modules[1])
	host := moduleHost(s)
	main := fmt.Sprintf(mergedModulesConfig, host, widgetsConfig("example.com/acme/widgets", "1.0.0"))

	oracle := testenv.WriteConfig(t, map[string]string{"main.tf": widgetsConfig("example.com/acme/widgets", "1.0.0")})
	testenv.Tofu(t, cfg).Run(t, oracle, "init", "-input=false", "-no-color")
	var firstBuild []string
	for _, h := range lockEntry(t, oracle, "example.com/acme/widgets", "1.0.0").Hashes {
		if strings.HasPrefix(h, "h1:") {
			firstBuild = append(firstBuild, h)
		}
	}
	if len(firstBuild) == 0 {
		t.Fatal("tofu with the oci_mirror blocks locked no h1 for 1.0.0")
	}

	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.new(t, networkMirrorConfig(s))
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": main})
			out := cli.Run(t, dir, "init", "-input=false", "-no-color")
			for _, want := range []string{
				"Downloading " + host + "/acme/greeting/aws 1.3.0 for pick",
				"Downloading " + host + "/acme/greeting/aws 1.2.0 for conflict",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("init output lacks %q:\n%s", want, out)
				}
			}
			for name, greeting := range map[string]string{"pick": `"Hello from second 1.3.0, `, "conflict": `"Hello from first 1.2.0, `} {
				got := readTree(t, filepath.Join(dir, ".terraform", "modules", name))
				if !strings.Contains(got["main.tf"], greeting) || len(got) != len(greetingPackage(t)) {
					t.Errorf("module %s: installed main.tf does not greet %s (files %v):\n%s", name, greeting, keys(got), got["main.tf"])
				}
			}
			proxied := lockEntry(t, dir, "example.com/acme/widgets", "1.0.0")
			for _, h := range firstBuild {
				if !slices.Contains(proxied.Hashes, h) {
					t.Errorf("provider 1.0.0 through the proxy locked %v, not the first block's build %s (tofu's, with the blocks)", proxied.Hashes, h)
				}
			}
		})
	}
	if logs := s.logs.String(); !strings.Contains(logs, "module version shadowed") || !strings.Contains(logs, "version=1.2.0") {
		t.Errorf("the shadowed 1.2.0 was not logged:\n%s", logs)
	}
}

// The templates also come from OCI_TOFU_MODULE_TEMPLATE, comma-separated
// (one template alone, as before, keeps working: the other e2e tests).
func TestServeModuleTemplatesFromEnvironment(t *testing.T) {
	modules := moduleSources(t, testenv.StartRegistry(t))
	s := startServeEnv(t, []string{"OCI_TOFU_MODULE_TEMPLATE=" + modules[0] + "," + modules[1]})
	code, body := s.get(t, "/v1/modules/acme/greeting/aws/versions")
	var doc struct {
		Modules []struct{ Versions []struct{ Version string } }
	}
	if err := json.Unmarshal(body, &doc); code != 200 || err != nil || len(doc.Modules) != 1 {
		t.Fatalf("versions: %d %s", code, body)
	}
	var got []string
	for _, v := range doc.Modules[0].Versions {
		got = append(got, v.Version)
	}
	if !slices.Equal(got, []string{"1.0.0", "1.2.0", "1.3.0", "2.0.0"}) {
		t.Errorf("versions %v, want both templates' 1.0.0, 1.2.0, 1.3.0 and 2.0.0", got)
	}
	code, body = s.get(t, "/")
	if code != 200 || !strings.Contains(string(body), "--module-template #2") {
		t.Errorf("the page does not list the second module template: %d", code)
	}
}

const mergedPullConfig = `
module "pinned" {
  source  = "%[1]s/acme/greeting/aws"
  version = "1.1.0"
}

module "pulled" {
  source  = "%[1]s/acme/greeting/aws"
  version = "1.0.0"
}

module "newest" {
  source  = "%[1]s/acme/greeting/aws"
  version = "~> 1.0"
}

module "local" {
  source  = "%[1]s/acme/local/aws"
  version = "0.1.0"
}
`

// With module pull-through and a second module template, the listing
// holds what the origin offers (1.0.0, 1.1.0) and what the second
// template holds (its own 1.1.0 and 1.5.0); a version a template holds is
// served from it without a fetch, and a version no template holds is
// pulled into the first template's repository (never the second's). A
// module the origin does not know (acme/local) is the second template's;
// with the origin down, a module the first template holds nothing of is
// listed from the second (acme/shout), the outage logged, as with one
// template the held versions are.
func TestServeMergedModulesWithPullThrough(t *testing.T) {
	isolateCache(t)
	o := startModuleOrigin(t)
	reg := testenv.StartRegistry(t)
	pushGreetingAs(t, reg.Host+"/held/acme/greeting/aws", "held", "1.1.0", "1.5.0")
	pushGreetingAs(t, reg.Host+"/held/acme/local/aws", "local", "0.1.0")
	pushGreetingAs(t, reg.Host+"/held/acme/shout/aws", "held shout", "0.9.0")
	// The second template holds pushed versions: only an address that
	// --pull-through-own-modules names exactly merges them with the
	// origin's (a * pattern never does: docs/proxy.md, "Pushed
	// repositories").
	s := startServe(t, o.serveArgs(reg, "--module-template", reg.Host+"/held/${namespace}/${name}/${system}",
		"--pull-through-own-modules", "acme/greeting/aws", "--pull-through-own-modules", "acme/shout/aws")...)
	host := moduleHost(s)
	packs := o.git.UploadPacks()
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(mergedPullConfig, host)})
	out := testenv.Tofu(t, "").Run(t, dir, "init", "-input=false", "-no-color")
	for _, want := range []string{"aws 1.1.0 for pinned", "aws 1.0.0 for pulled", "aws 1.5.0 for newest", "local/aws 0.1.0 for local"} {
		if !strings.Contains(out, want) {
			t.Errorf("init output lacks %q:\n%s", want, out)
		}
	}
	for name, greeting := range map[string]string{"pinned": `"Hello from held 1.1.0, `, "pulled": `"Hello from 1.0.0, `, "newest": `"Hello from held 1.5.0, `} {
		if got := readTree(t, filepath.Join(dir, ".terraform", "modules", name))["main.tf"]; !strings.Contains(got, greeting) {
			t.Errorf("module %s: installed main.tf does not greet %s:\n%s", name, greeting, got)
		}
	}
	if n := o.git.UploadPacks() - packs; n != 1 {
		t.Errorf("%d git fetches, want 1 (1.0.0; 1.1.0 is held by the second template)", n)
	}
	if tagDigest(t, reg, "pulled/acme/greeting/aws", "1.0.0") == "" || tagDigest(t, reg, "held/acme/greeting/aws", "1.0.0") != "" {
		t.Error("1.0.0 was not pulled into the first template's repository alone")
	}
	if tagDigest(t, reg, "pulled/acme/greeting/aws", "1.1.0") != "" {
		t.Error("1.1.0, held by the second template, was pulled anyway")
	}

	o.reg.Stop()
	code, body := s.get(t, "/v1/modules/acme/shout/aws/versions")
	if code != 200 || !strings.Contains(string(body), `"0.9.0"`) || strings.Contains(string(body), `"1.0.0"`) {
		t.Errorf("acme/shout/aws with the origin down: %d %s, want the second template's 0.9.0", code, body)
	}
	// The log reaches the test through serve's stderr pipe, which may lag
	// the answer: wait for the line.
	pollUntil(t, "the origin's outage in the log", func() bool {
		return strings.Contains(s.logs.String(), "listing only what the registry holds")
	})
}

// A template given twice is refused at start: the second could never
// serve anything.
func TestServeRefusesRepeatedModuleTemplate(t *testing.T) {
	tpl := "localhost:5000/m/${namespace}/${name}/${system}"
	out, err := run(t, "serve", "--insecure-no-tls", "--listen", "127.0.0.1:0", "--module-template", tpl, "--module-template", tpl)
	if err == nil || !strings.Contains(out, "is given twice") || strings.Contains(out, "msg=serving") {
		t.Errorf("serve with one module template twice: %v\n%s", err, out)
	}
}
