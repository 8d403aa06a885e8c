package e2e

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// lockCase is one configuration of the differential corpus. Templates in
// files and expectations: {{HOST}} the proxy as provider registry,
// {{MODHOST}} the proxy as module registry, {{REG}} the OCI registry, and
// in expectations {{DEFAULT}} the client's default registry host.
type lockCase struct {
	name  string
	files map[string]string
	// clients this configuration is locked for (tofu when empty).
	clients []tfconfig.Client
	// platforms to lock (all three generated ones when empty).
	platforms []string
	// get installs modules (`tofu get`) before locking.
	get bool
	// want is the locked address → version; wantFor overrides it per
	// client where the clients decide differently.
	want    map[string]string
	wantFor map[tfconfig.Client]map[string]string
	// lockErr, when set, is what lock must fail with (per client); the
	// client itself must then fail too, with clientErr.
	lockErr, clientErr map[tfconfig.Client]string
	// unusedInPriorLock are providers of a given lock file that nothing
	// requires: tofu init drops them (so does lock), tofu providers lock
	// keeps them.
	unusedInPriorLock []string
	// initOnly are providers tofu init requires but `providers lock`
	// ignores (it reads the configuration without test files): the init
	// checks are their oracle.
	initOnly []string
}

func bothClients() []tfconfig.Client { return []tfconfig.Client{tfconfig.Tofu, tfconfig.Terraform} }

// widgets is a required_providers block for acme/widgets on the proxy.
func widgets(constraint string) string {
	return `
terraform {
  required_providers {
    widgets = {
      source  = "{{HOST}}/acme/widgets"
      version = "` + constraint + `"
    }
  }
}
`
}

// lockCorpus is the differential suite's corpus; each entry says what it
// proves.
var lockCorpus = []lockCase{{
	name:    "root module only",
	files:   map[string]string{"main.tf": widgets("~> 1.0")},
	clients: bothClients(),
	want:    map[string]string{"{{HOST}}/acme/widgets": "1.3.0"},
}, {
	// Bug 1: the providers come from a local child module only.
	name: "providers only in a local child module",
	files: map[string]string{
		"main.tf":     `module "net" { source = "./net" }`,
		"net/main.tf": widgets(">= 1.2"),
	},
	clients: bothClients(),
	want:    map[string]string{"{{HOST}}/acme/widgets": "2.0.0"},
}, {
	// Bug 1: root >= 1.0 and module ~> 1.2.0 → 1.2.5, not 2.0.0.
	name: "constraints of root and child combined",
	files: map[string]string{
		"main.tf":       widgets(">= 1.0") + `module "child" { source = "./child" }`,
		"child/main.tf": widgets("~> 1.2.0"),
	},
	clients: bothClients(),
	want:    map[string]string{"{{HOST}}/acme/widgets": "1.2.5"},
}, {
	name: "nested local modules, one outside the root directory",
	files: map[string]string{
		"root/main.tf":       `module "a" { source = "./a" }`,
		"root/a/main.tf":     `module "b" { source = "../../shared/b" }` + "\n" + widgets("< 2.0.0"),
		"shared/b/main.tf":   `module "c" { source = "./c" }`,
		"shared/b/c/main.tf": widgets("!= 1.3.0"),
	},
	clients: bothClients(),
	want:    map[string]string{"{{HOST}}/acme/widgets": "1.2.5"},
}, {
	name: "implied providers: resources, data sources, provider blocks, no required_providers",
	files: map[string]string{
		"main.tf":     `resource "gadget_thing" "a" {}` + "\n" + `module "m" { source = "./m" }`,
		"m/main.tf":   `data "gadget_info" "b" {}` + "\n" + `provider "gadget" {}`,
		"m/extra.tf":  `resource "terraform_data" "builtin" {}`,
		"m/README.md": "not configuration",
	},
	clients: bothClients(),
	want:    map[string]string{"{{DEFAULT}}/hashicorp/gadget": "1.0.0"},
}, {
	name: "a local name other than the type; aliases and configuration_aliases",
	files: map[string]string{
		"main.tf": `
terraform {
  required_providers {
    w = {
      source  = "{{HOST}}/acme/widgets"
      version = "~> 1.2"
    }
  }
}
provider "w" {
  alias = "west"
}
resource "w_thing" "a" {}
module "child" {
  source    = "./child"
  providers = { widgets.x = w.west }
}
`,
		"child/main.tf": `
terraform {
  required_providers {
    widgets = {
      source                = "{{HOST}}/acme/widgets"
      configuration_aliases = [widgets.x]
    }
  }
}
resource "widgets_thing" "b" { provider = widgets.x }
`,
	},
	clients: bothClients(),
	want:    map[string]string{"{{HOST}}/acme/widgets": "1.3.0"},
}, {
	name:    "a pre-release named exactly",
	files:   map[string]string{"main.tf": widgets("2.1.0-beta1")},
	clients: bothClients(),
	want:    map[string]string{"{{HOST}}/acme/widgets": "2.1.0-beta1"},
}, {
	name:    "pre-releases not named are never chosen",
	files:   map[string]string{"main.tf": widgets(">= 2.0")},
	clients: bothClients(),
	want:    map[string]string{"{{HOST}}/acme/widgets": "2.0.0"},
}, {
	name:    "exclusions",
	files:   map[string]string{"main.tf": widgets(">= 1.0, != 1.3.0, < 2.0.0, != 1.2.5")},
	clients: bothClients(),
	want:    map[string]string{"{{HOST}}/acme/widgets": "1.2.0"},
}, {
	// An existing lock from one platform via oci_mirror (its h1 and zh
	// only): the locked version stays although newer ones match, and the
	// other platforms' hashes are added.
	name: "an existing partial lock",
	files: map[string]string{
		"main.tf": widgets("~> 1.2"),
		".terraform.lock.hcl": `
provider "{{HOST}}/acme/widgets" {
  version     = "1.2.0"
  constraints = "~> 1.2"
  hashes = [
    "{{H1 widgets 1.2.0 linux_amd64}}",
  ]
}

provider "{{HOST}}/acme/unused" {
  version = "1.0.0"
  hashes  = ["h1:unused="]
}
`,
	},
	clients:           bothClients(),
	want:              map[string]string{"{{HOST}}/acme/widgets": "1.2.0"},
	unusedInPriorLock: []string{"{{HOST}}/acme/unused"},
}, {
	// Bug 3: Terraform reads acme/widgets as registry.terraform.io/acme/widgets.
	name: "short provider addresses",
	files: map[string]string{"main.tf": `
terraform {
  required_providers {
    widgets = {
      source  = "acme/widgets"
      version = "~> 1.0"
    }
  }
}
`},
	clients: bothClients(),
	want:    map[string]string{"{{DEFAULT}}/acme/widgets": "1.3.0"},
}, {
	// Bug 5: "v1.3.0" and "latest" are no versions; "1.2" is not chosen
	// because the constraint excludes 1.2.0.
	name:    "odd tags in the repository, outside the constraint",
	files:   map[string]string{"main.tf": strings.ReplaceAll(widgets("~> 1.1.0"), "acme/widgets", "acme/tagged")},
	clients: bothClients(),
	want:    map[string]string{"{{HOST}}/acme/tagged": "1.1.0"},
}, {
	// Bug 5: tofu's oci_mirror lists tag "1.2" as 1.2.0, selects it and
	// fails to resolve tag "1.2.0"; lock fails as clearly. Terraform
	// reaches OCI through the proxy, which lists canonical tags only: it
	// gets 1.1.0, and so does lock --for terraform. (tofu through the
	// proxy would get 1.1.0 too: the routes disagree, and lock follows the
	// native one.)
	name:      "a tag 1.2 that tofu lists as 1.2.0",
	files:     map[string]string{"main.tf": strings.ReplaceAll(widgets(">= 1.1"), "acme/widgets", "acme/tagged")},
	clients:   bothClients(),
	wantFor:   map[tfconfig.Client]map[string]string{tfconfig.Terraform: {"{{HOST}}/acme/tagged": "1.1.0"}},
	lockErr:   map[tfconfig.Client]string{tfconfig.Tofu: `reads tag "1.2" as version 1.2.0 and selects it, then fails to resolve tag "1.2.0"`},
	clientErr: map[tfconfig.Client]string{tfconfig.Tofu: `Error while installing {{HOST}}/acme/tagged v1.2.0: resolving tag "1.2.0"`},
}, {
	name:      "a provider with many versions",
	files:     map[string]string{"main.tf": strings.ReplaceAll(widgets("~> 3.4, != 3.9.0"), "acme/widgets", "acme/many")},
	clients:   bothClients(),
	platforms: []string{"linux_amd64", "darwin_arm64"},
	want:      map[string]string{"{{HOST}}/acme/many": "3.9.1+build.7"},
}, {
	// tofu only: Terraform has no oci:// module sources.
	name: "a module installed from OCI (oci://) with a local module inside",
	files: map[string]string{
		"main.tf": `module "net" { source = "oci://{{REG}}/modules/net?tag=1.0.0" }` + "\n" + widgets(">= 1.0"),
	},
	get:  true,
	want: map[string]string{"{{HOST}}/acme/widgets": "1.2.5", "registry.opentofu.org/hashicorp/gadget": "1.0.0"},
}, {
	name: "a module installed from the proxy's module registry",
	files: map[string]string{"main.tf": `
module "net" {
  source  = "{{MODHOST}}/acme/net/aws"
  version = "~> 1.0"
}
`},
	clients: bothClients(),
	get:     true,
	want:    map[string]string{"{{HOST}}/acme/widgets": "1.2.5", "{{DEFAULT}}/hashicorp/gadget": "1.0.0"},
}, {
	// Bug 4: tofu and terraform refuse two required_providers blocks.
	name: "duplicate required_providers blocks",
	files: map[string]string{
		"a.tf": widgets("~> 1.0"),
		"b.tf": strings.ReplaceAll(widgets("~> 1.2"), "widgets =", "other ="),
	},
	clients:   bothClients(),
	lockErr:   map[tfconfig.Client]string{tfconfig.Tofu: "Duplicate required providers configuration", tfconfig.Terraform: "Duplicate required providers configuration"},
	clientErr: map[tfconfig.Client]string{tfconfig.Tofu: "Duplicate required providers configuration", tfconfig.Terraform: "Duplicate required providers configuration"},
}, {
	// tofu reads main.tofu instead of main.tf; Terraform never reads .tofu
	// files.
	name: ".tofu files hide .tf files for tofu only",
	files: map[string]string{
		"main.tf":   widgets("~> 1.0"),
		"main.tofu": widgets("~> 2.0"),
	},
	clients: bothClients(),
	wantFor: map[tfconfig.Client]map[string]string{
		tfconfig.Tofu:      {"{{HOST}}/acme/widgets": "2.0.0"},
		tfconfig.Terraform: {"{{HOST}}/acme/widgets": "1.3.0"},
	},
}, {
	name: "override files",
	files: map[string]string{
		"main.tf":          widgets("~> 1.0") + `resource "widgets_thing" "a" {}`,
		"main_override.tf": widgets("1.2.0"),
	},
	clients: bothClients(),
	want:    map[string]string{"{{HOST}}/acme/widgets": "1.2.0"},
}, {
	name: "JSON configuration",
	files: map[string]string{
		"main.tf.json": `{"terraform": {"required_providers": {"widgets": {"source": "{{HOST}}/acme/widgets", "version": "~> 1.2.0"}}},
 "data": {"gadget_info": {"x": {}}}}`,
	},
	clients: bothClients(),
	want:    map[string]string{"{{HOST}}/acme/widgets": "1.2.5", "{{DEFAULT}}/hashicorp/gadget": "1.0.0"},
}, {
	name: "several providers, one with GnuPG-signed fixtures",
	files: map[string]string{"main.tf": `
terraform {
  required_providers {
    widgets = {
      source  = "{{HOST}}/acme/widgets"
      version = "~> 2.0"
    }
    hello = {
      source  = "{{HOST}}/test/hello"
      version = "~> 1.0"
    }
  }
}
`},
	clients:   bothClients(),
	platforms: []string{"linux_amd64", "darwin_arm64"},
	want:      map[string]string{"{{HOST}}/acme/widgets": "2.0.0", "{{HOST}}/test/hello": "1.1.0"},
}, {
	name:    "a deprecated version argument in a provider block",
	files:   map[string]string{"main.tf": `provider "gadget" { version = "< 1.0.0" }`},
	clients: bothClients(),
	want:    map[string]string{"{{DEFAULT}}/hashicorp/gadget": "0.9.0"},
}, {
	name: "a provider block in a test file",
	files: map[string]string{
		"main.tf":               widgets("1.0.0"),
		"tests/main.tftest.hcl": `provider "gadget" {}` + "\n" + `run "plan" { command = plan }`,
	},
	clients: bothClients(),
	want:    map[string]string{"{{HOST}}/acme/widgets": "1.0.0", "{{DEFAULT}}/hashicorp/gadget": "1.0.0"},
	// Terraform 1.11's init does not count test files' provider blocks
	// (it refuses a lock file holding gadget: "Provider dependency changes
	// detected"); tofu's does.
	wantFor:  map[tfconfig.Client]map[string]string{tfconfig.Terraform: {"{{HOST}}/acme/widgets": "1.0.0"}},
	initOnly: []string{"{{DEFAULT}}/hashicorp/gadget"},
}, {
	// An in-house build pushed --unsigned: no signed SHA256SUMS, so the zh
	// of every package of the index. (Not through the registry protocol:
	// the proxy has no signing key.)
	name:      "an unsigned in-house provider",
	files:     map[string]string{"main.tf": strings.ReplaceAll(widgets("0.1.0"), "{{HOST}}/acme/widgets", "example.com/test/inhouse")},
	clients:   bothClients(),
	platforms: []string{"linux_amd64", "darwin_arm64"},
	want:      map[string]string{"example.com/test/inhouse": "0.1.0"},
}, {
	name: "a remote module that is not installed yet",
	files: map[string]string{"main.tf": `
module "net" {
  source  = "{{MODHOST}}/acme/net/aws"
  version = "~> 1.0"
}
`},
	lockErr: map[tfconfig.Client]string{tfconfig.Tofu: `Run "tofu init -backend=false"`},
}}

// TestLockDifferential locks every configuration of the corpus with
// oci-tofu lock and with the real client (`providers lock` through the
// same registry), compares the two hash set by hash set (and byte for
// byte where the sets must agree), then has the client install from each
// route with -lockfile=readonly: the file must stay as it is, with no
// warning about it.
func TestLockDifferential(t *testing.T) {
	e := startLockEnv(t)
	for _, tc := range lockCorpus {
		clients := tc.clients
		if len(clients) == 0 {
			clients = []tfconfig.Client{tfconfig.Tofu}
		}
		for _, c := range clients {
			t.Run(tc.name+"/"+string(c), func(t *testing.T) {
				t.Parallel()
				e.runCase(t, tc, c)
			})
		}
	}
}

func (e *lockEnv) runCase(t *testing.T, tc lockCase, c tfconfig.Client) {
	files := map[string]string{}
	for name, body := range tc.files {
		files[name] = e.expandHashes(t, e.expand(body))
	}
	w := newWorkspace(t, files)
	dir := w.dir
	platforms := tc.platforms
	if len(platforms) == 0 {
		platforms = genPlatforms
	}
	if tc.get {
		newCLI(t, c, "").Run(t, dir, "get", "-no-color")
	}
	args := []string{"lock", "--for", string(c), "--provider-template", e.template}
	for _, p := range platforms {
		args = append(args, "--platform", p)
	}
	out, err := run(t, append(args, dir)...)
	if want := tc.lockErr[c]; want != "" {
		if err == nil || !strings.Contains(out, want) {
			t.Fatalf("lock: want an error with %q, got %v:\n%s", want, err, out)
		}
		if want := tc.clientErr[c]; want != "" {
			e.expectClientFailure(t, c, w, e.expand(want))
		}
		return
	}
	if err != nil {
		t.Fatalf("lock: %v\n%s", err, out)
	}
	ours := readLock(t, dir)
	want := tc.want
	if w, ok := tc.wantFor[c]; ok {
		want = w
	}
	e.checkVersions(t, c, ours, want)
	e.compareWithClientLock(t, c, tc, w, ours, platforms)
	for _, r := range routesFor(c) {
		e.checkAcceptedUnchanged(t, c, r, w)
	}
}

// workspace is a configuration on disk: its files under base, the root
// module at dir (base/root when the corpus entry has one, for modules
// outside the root directory).
type workspace struct{ base, dir string }

func newWorkspace(t *testing.T, files map[string]string) workspace {
	w := workspace{base: t.TempDir()}
	writeFiles(t, w.base, files)
	w.dir = w.base
	if _, ok := files["root/main.tf"]; ok {
		w.dir = filepath.Join(w.base, "root")
	}
	return w
}

// copy copies the whole workspace (installed modules and lock included).
func (w workspace) copy(t *testing.T) workspace {
	rel, _ := filepath.Rel(w.base, w.dir)
	c := workspace{base: copyTree(t, w.base)}
	c.dir = filepath.Join(c.base, rel)
	return c
}

// expandHashes fills {{H1 type version platform}} with the h1 tofu
// computes for a generated package.
func (e *lockEnv) expandHashes(t *testing.T, s string) string {
	for {
		i := strings.Index(s, "{{H1 ")
		if i < 0 {
			return s
		}
		j := strings.Index(s[i:], "}}")
		f := strings.Fields(s[i+5 : i+j])
		h1 := generatedH1(t, f[0], f[1], f[2])
		s = s[:i] + h1 + s[i+j+2:]
	}
}

// checkVersions compares the locked providers with the expectation.
func (e *lockEnv) checkVersions(t *testing.T, c tfconfig.Client, lf *lockfile.File, want map[string]string) {
	t.Helper()
	expected := map[string]string{}
	for addr, v := range want {
		expected[strings.ReplaceAll(e.expand(addr), "{{DEFAULT}}", c.RegistryHost())] = v
	}
	if got := lockVersions(lf); !maps.Equal(got, expected) {
		t.Fatalf("locked %v, want %v", got, expected)
	}
}

// compareWithClientLock has the real client lock a copy of the
// configuration (with the same modules and prior lock) for the same
// platforms: `providers lock` through the proxy's registry protocol, where
// every provider lives on the proxy's host, else through its network
// mirror. Registry: the same providers, versions and hashes, byte for byte
// the same file. Network mirror: the client records only what it
// verified (tofu h1 and zh of each platform, Terraform h1), so ours must
// hold all of that, and nothing more than the signed checksums add.
func (e *lockEnv) compareWithClientLock(t *testing.T, c tfconfig.Client, tc lockCase, w workspace, ours *lockfile.File, platforms []string) {
	t.Helper()
	theirsDir := w.copy(t).dir
	os.Remove(filepath.Join(theirsDir, ".terraform.lock.hcl"))
	if prior := tc.files[".terraform.lock.hcl"]; prior != "" {
		os.WriteFile(filepath.Join(theirsDir, ".terraform.lock.hcl"), []byte(e.expandHashes(t, e.expand(strings.TrimLeft(prior, "\n")))), 0o644)
	}
	cli := newCLI(t, c, "")
	cli.Run(t, theirsDir, "get", "-no-color")
	initOnly := map[string]bool{}
	for _, a := range tc.initOnly {
		initOnly[strings.ReplaceAll(e.expand(a), "{{DEFAULT}}", c.RegistryHost())] = true
	}
	var onProxy, elsewhere []string
	for _, p := range ours.Providers {
		switch {
		case initOnly[p.Address]:
		case strings.HasPrefix(p.Address, e.Host()+"/"):
			onProxy = append(onProxy, p.Address)
		default:
			elsewhere = append(elsewhere, p.Address)
		}
	}
	args := []string{"providers", "lock", "-no-color"}
	for _, p := range platforms {
		args = append(args, "-platform="+p)
	}
	if len(onProxy) > 0 {
		cli.Run(t, theirsDir, append(args, onProxy...)...)
	}
	if len(elsewhere) > 0 {
		cli.Run(t, theirsDir, append(append(args, "-net-mirror="+e.proxy.URL+"/v1/mirror/"), elsewhere...)...)
	}
	theirs := readLock(t, theirsDir)

	unused := map[string]bool{}
	for _, u := range tc.unusedInPriorLock {
		unused[e.expand(u)] = true
	}
	for _, tp := range theirs.Providers {
		op := ours.Provider(tp.Address)
		switch {
		case op == nil && unused[tp.Address]:
			continue // providers lock keeps what init (and lock) drop
		case op == nil:
			t.Errorf("%s providers lock locked %s %s, lock did not", c, tp.Address, tp.Version)
			continue
		case op.Version != tp.Version || op.Constraints != tp.Constraints:
			t.Errorf("%s: %s %q from %s providers lock, %s %q from lock", tp.Address, tp.Version, tp.Constraints, c, op.Version, op.Constraints)
		}
		if strings.HasPrefix(tp.Address, e.Host()+"/") {
			if !slices.Equal(op.Hashes, tp.Hashes) {
				t.Errorf("%s: hashes differ\n  %s providers lock: %v\n  oci-tofu lock:      %v", tp.Address, c, tp.Hashes, op.Hashes)
			}
			continue
		}
		if miss := missingFrom(tp.Hashes, op.Hashes); len(miss) > 0 {
			t.Errorf("%s: lock lacks %v that %s recorded", tp.Address, miss, c)
		}
		extra := missingFrom(op.Hashes, tp.Hashes)
		if miss := missingFrom(extra, e.signedOrIndexHashes(t, tp.Address, tp.Version)); len(miss) > 0 {
			t.Errorf("%s: lock holds %v, neither recorded by %s nor signed", tp.Address, miss, c)
		}
	}
	for _, op := range ours.Providers {
		if theirs.Provider(op.Address) == nil && !initOnly[op.Address] {
			t.Errorf("lock locked %s %s, %s providers lock did not", op.Address, op.Version, c)
		}
	}
	if len(elsewhere) == 0 && len(tc.unusedInPriorLock) == 0 && len(initOnly) == 0 {
		want, _ := os.ReadFile(filepath.Join(theirsDir, ".terraform.lock.hcl"))
		got, _ := os.ReadFile(filepath.Join(w.dir, ".terraform.lock.hcl"))
		if string(got) != string(want) {
			t.Errorf("the files differ:\n--- %s providers lock\n%s\n--- oci-tofu lock\n%s", c, want, got)
		}
	}
}

// signedOrIndexHashes is what a release may add beyond what a client
// verified: the zh of every line of its signed SHA256SUMS, or, unsigned,
// the zh of its packages (the fixtures' files).
func (e *lockEnv) signedOrIndexHashes(t *testing.T, address, version string) []string {
	if zh := e.signedHashes(address, version); zh != nil {
		return zh
	}
	parts := strings.Split(address, "/")
	typ := parts[len(parts)-1]
	dir := testenv.Testdata(t, "providers", typ, version)
	zips, _ := filepath.Glob(filepath.Join(dir, "*.zip"))
	var out []string
	for _, z := range zips {
		b, err := os.ReadFile(z)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, "zh:"+sha256Hex(b))
	}
	return out
}

// checkAcceptedUnchanged installs with the client through a route with
// -lockfile=readonly: it must succeed without touching the file or
// warning about it.
func (e *lockEnv) checkAcceptedUnchanged(t *testing.T, c tfconfig.Client, r route, w workspace) {
	t.Helper()
	work := w.copy(t).dir
	before, _ := os.ReadFile(filepath.Join(work, ".terraform.lock.hcl"))
	out, err := newCLI(t, c, r.cliConfig(e)).Try(t, work, "init", "-backend=false", "-input=false", "-no-color", "-lockfile=readonly")
	if err != nil {
		t.Errorf("%s init via %s refused the lock file: %v\n%s\n%s", c, r.name, err, out, before)
		return
	}
	after, _ := os.ReadFile(filepath.Join(work, ".terraform.lock.hcl"))
	if string(after) != string(before) {
		t.Errorf("%s init via %s changed the lock file:\n%s", c, r.name, after)
	}
	for _, bad := range []string{"Incomplete lock file information", "Provider lock file not updated", "Provider dependency changes detected"} {
		if strings.Contains(out, bad) {
			t.Errorf("%s init via %s: %q\n%s", c, r.name, bad, out)
		}
	}
}

// expectClientFailure runs the client's init on the configuration (tofu
// through oci_mirror, Terraform through the network mirror) and expects it
// to fail with want.
func (e *lockEnv) expectClientFailure(t *testing.T, c tfconfig.Client, w workspace, want string) {
	t.Helper()
	r := proxyRoute
	if c == tfconfig.Tofu {
		r = ociMirrorRoute
	}
	out, err := newCLI(t, c, r.cliConfig(e)).Try(t, w.copy(t).dir, "init", "-backend=false", "-input=false", "-no-color")
	// The clients wrap their messages.
	if err == nil || !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
		t.Errorf("%s init via %s: want a failure with %q, got %v:\n%s", c, r.name, want, err, out)
	}
}
