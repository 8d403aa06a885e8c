package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// catalogIndex is the catalogue index's JSON, as a client reads it.
type catalogIndex struct {
	Total   int `json:"total"`
	Modules []struct {
		Address  string `json:"address"`
		URL      string `json:"url"`
		Latest   string `json:"latest"`
		Versions int    `json:"versions"`
	} `json:"modules"`
}

// catalogModule is a module page's JSON, as a client reads it.
type catalogModule struct {
	Address    string `json:"address"`
	Version    string `json:"version"`
	Latest     string `json:"latest"`
	Repository string `json:"repository"`
	Manifest   string `json:"manifest"`
	Interface  string `json:"interface"`
	Dir        string `json:"dir"`
	Versions   []struct {
		Version string `json:"version"`
		Status  string `json:"status"`
	} `json:"versions"`
	Module struct {
		Inputs []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			Required bool   `json:"required"`
		} `json:"inputs"`
		Outputs []struct {
			Name string `json:"name"`
		} `json:"outputs"`
		RequiredProviders []json.RawMessage `json:"required_providers"`
	} `json:"module"`
	Submodules []struct {
		Dir string `json:"dir"`
		URL string `json:"url"`
	} `json:"submodules"`
	Usage *struct {
		Registry   string `json:"registry"`
		OCI        string `json:"oci"`
		Constraint string `json:"constraint"`
	} `json:"usage"`
	README *struct {
		Path     string `json:"path"`
		Markdown string `json:"markdown"`
	} `json:"readme"`
}

// inputs are the page's inputs as "name:type" (with "!" for a
// required one), in the page's order.
func (m catalogModule) inputs() []string {
	var out []string
	for _, in := range m.Module.Inputs {
		s := in.Name + ":" + in.Type
		if in.Required {
			s += "!"
		}
		out = append(out, s)
	}
	return out
}

func (m catalogModule) outputs() []string {
	var out []string
	for _, o := range m.Module.Outputs {
		out = append(out, o.Name)
	}
	return out
}

// greeterReadme is the README of the hand-written module.
const greeterReadme = "# greeter\n\nGreets `name` in each zone; see [the submodule](modules/sub).\n"

// writeGreeter writes the hand-written module of version v: provider
// free (so that validate runs offline), with required inputs of three
// kinds, an optional one, an output, a README and a submodule with its
// own input. The version is in main.tf, so the installed files tell
// which version was installed.
func writeGreeter(t *testing.T, v string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "greeter")
	files := map[string]string{
		"README.md": greeterReadme,
		"variables.tf": `variable "name" {
  type        = string
  description = "Who to greet."
}

variable "zones" {
  type        = list(string)
  description = "Where to greet."
}

variable "punctuation" {
  type    = string
  default = "!"
}
`,
		"main.tf": fmt.Sprintf(`locals {
  version = %q
}

output "greetings" {
  description = "One greeting a zone."
  value       = [for z in var.zones : "Hello from ${local.version} in ${z}, ${var.name}${var.punctuation}"]
}
`, v),
		"modules/sub/main.tf": `variable "text" {
  type        = string
  description = "What to shout."
}

output "shouted" {
  value = upper(var.text)
}
`,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// orasPushModule packs dir with zip(1) and pushes it to ref with the real
// oras CLI as a module package (artifactType
// application/vnd.opentofu.modulepkg, one archive/zip layer): no
// interface is stored beside it.
func orasPushModule(t *testing.T, reg *testenv.Registry, dir, ref string) {
	t.Helper()
	work := t.TempDir()
	testenv.MustRun(t, dir, nil, "zip", "-q", "-r", "-X", filepath.Join(work, "module.zip"), ".")
	out, err := testenv.Run(t, work, testenvEnv(t), testenv.Tool(t, "oras"), "push", "--no-tty",
		"--plain-http=false", "--ca-file", reg.CA.CertFile,
		"--artifact-type", "application/vnd.opentofu.modulepkg", ref, "module.zip:archive/zip")
	if err != nil {
		t.Fatalf("oras push %s: %v\n%s", ref, err, out)
	}
}

// catalogGet GETs path of the catalogue as JSON from base (the proxy
// named as clients name it: the host names the module addresses) and
// decodes it into v.
func catalogGet(t *testing.T, s *served, base, path string, v any) {
	t.Helper()
	req, err := http.NewRequest("GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET %s: %d %s\n%s", path, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, b)
	}
}

// installedModules are modules.json's entries by key: source, version and
// directory.
func installedModules(t *testing.T, dir string) map[string][3]string {
	t.Helper()
	var manifest struct {
		Modules []struct{ Key, Source, Version, Dir string }
	}
	b, err := os.ReadFile(filepath.Join(dir, ".terraform", "modules", "modules.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		t.Fatal(err)
	}
	out := map[string][3]string{}
	for _, m := range manifest.Modules {
		if m.Key != "" {
			out[m.Key] = [3]string{m.Source, m.Version, filepath.ToSlash(m.Dir)}
		}
	}
	return out
}

// The catalogue, end to end with real parts: modules pushed by oci-tofu
// (two versions, interface stored beside the package) and by the oras
// CLI (no interface stored) into a real Distribution are listed by a
// freshly started `oci-tofu serve` (nothing served before) and their
// pages show the interface the directory declares, stored or extracted.
// The snippets the pages give, unchanged, are configurations real tofu
// and terraform install through the proxy (usage.registry: the version
// the page shows, root module and //modules/sub) and real tofu from the
// registry (usage.oci: the same files), and that tofu and terraform
// validate offline with the snippets' placeholders.
func TestCatalogEndToEnd(t *testing.T) {
	isolateCache(t)
	reg := testenv.StartRegistry(t)
	repos := reg.Host + "/modules/acme"
	greeter := map[string]string{}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		greeter[v] = writeGreeter(t, v)
		pushModule(t, greeter[v], repos+"/greeter/generic:"+v)
	}
	plainDir := writeGreeter(t, "0.3.0")
	orasPushModule(t, reg, plainDir, repos+"/plain/generic:0.3.0")

	s := startServe(t, "--module-template", reg.Host+"/modules/${namespace}/${name}/${system}")
	host := moduleHost(s)
	base := "https://" + host + "/"

	// The index, first request of all: both modules, their newest version
	// and how many are served.
	var index catalogIndex
	catalogGet(t, s, base, "catalog/?format=json", &index)
	var listed []string
	pages := map[string]string{}
	for _, m := range index.Modules {
		listed = append(listed, fmt.Sprintf("%s %s %d", m.Address, m.Latest, m.Versions))
		u, err := url.Parse(m.URL)
		if err != nil {
			t.Fatal(err)
		}
		pages[m.Address[strings.IndexByte(m.Address, '/'):]] = strings.TrimPrefix((&url.URL{Path: "/catalog/"}).ResolveReference(u).Path, "/")
	}
	wantListed := []string{host + "/acme/greeter/generic 1.1.0 2", host + "/acme/plain/generic 0.3.0 1"}
	if !reflect.DeepEqual(listed, wantListed) || index.Total != 2 {
		t.Errorf("index lists %q (total %d), want %q", listed, index.Total, wantListed)
	}

	// The module pages, reached by the index's links.
	wantInputs := []string{"name:string!", "punctuation:string", "zones:list(string)!"}
	page := func(path string) catalogModule {
		t.Helper()
		var m catalogModule
		if path == "" {
			t.Fatal("no page to read")
		}
		catalogGet(t, s, base, path, &m)
		if m.Usage == nil {
			t.Fatalf("%s: no usage", path)
		}
		return m
	}
	root := page(pages["/acme/greeter/generic"])
	plain := page(pages["/acme/plain/generic"])
	for _, c := range []struct {
		m                          catalogModule
		address, version, how, rep string
	}{
		{root, host + "/acme/greeter/generic", "1.1.0", "stored", reg.Host + "/modules/acme/greeter/generic"},
		{plain, host + "/acme/plain/generic", "0.3.0", "extracted", reg.Host + "/modules/acme/plain/generic"},
	} {
		m := c.m
		if m.Address != c.address || m.Version != c.version || m.Latest != c.version || m.Interface != c.how || m.Repository != c.rep || m.Dir != "" {
			t.Errorf("page of %s: address %s version %s latest %s interface %q repository %s dir %q; want version %s, interface %q, repository %s",
				c.address, m.Address, m.Version, m.Latest, m.Interface, m.Repository, m.Dir, c.version, c.how, c.rep)
		}
		if got := sortedStrings(m.inputs()); !reflect.DeepEqual(got, wantInputs) {
			t.Errorf("%s inputs %q, want %q", c.address, got, wantInputs)
		}
		if got := m.outputs(); !reflect.DeepEqual(got, []string{"greetings"}) {
			t.Errorf("%s outputs %q", c.address, got)
		}
		if len(m.Module.RequiredProviders) != 0 {
			t.Errorf("%s requires providers: %s", c.address, m.Module.RequiredProviders)
		}
		if m.README == nil || m.README.Path != "README.md" || m.README.Markdown != greeterReadme {
			t.Errorf("%s README %+v", c.address, m.README)
		}
		if len(m.Submodules) != 1 || m.Submodules[0].Dir != "modules/sub" {
			t.Errorf("%s submodules %+v", c.address, m.Submodules)
		}
	}
	var versions []string
	for _, v := range root.Versions {
		versions = append(versions, v.Version+" "+v.Status)
	}
	if want := []string{"1.1.0 served", "1.0.0 served"}; !reflect.DeepEqual(versions, want) {
		t.Errorf("versions %q, want %q", versions, want)
	}
	// An older version's page is its own, its interface stored too.
	var older catalogModule
	catalogGet(t, s, base, pages["/acme/greeter/generic"]+"/1.0.0", &older) // the page's own URL: the registry hostname, no port
	if older.Version != "1.0.0" || older.Latest != "1.1.0" || older.Interface != "stored" || older.Manifest == root.Manifest {
		t.Errorf("page of 1.0.0: version %s latest %s interface %q manifest %s (1.1.0's %s)", older.Version, older.Latest, older.Interface, older.Manifest, root.Manifest)
	}
	// The submodule's page, by the root page's link (relative to it).
	subURL, err := url.Parse(root.Submodules[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	sub := page(strings.TrimPrefix((&url.URL{Path: "/" + pages["/acme/greeter/generic"]}).ResolveReference(subURL).Path, "/"))
	if sub.Dir != "modules/sub" || sub.Version != "1.1.0" || sub.Interface != "stored" {
		t.Errorf("submodule page: dir %q version %s interface %q", sub.Dir, sub.Version, sub.Interface)
	}
	if got := sub.inputs(); !reflect.DeepEqual(got, []string{"text:string!"}) {
		t.Errorf("submodule inputs %q", got)
	}
	if got := sub.outputs(); !reflect.DeepEqual(got, []string{"shouted"}) {
		t.Errorf("submodule outputs %q", got)
	}
	if !strings.Contains(sub.Usage.Registry, `"`+host+`/acme/greeter/generic//modules/sub"`) {
		t.Errorf("submodule registry snippet:\n%s", sub.Usage.Registry)
	}
	for _, m := range []catalogModule{root, plain, sub} {
		t.Logf("page of %s, dir %q:\n%s\n%s", m.Address, m.Dir, m.Usage.Registry, m.Usage.OCI)
	}

	// The registry snippets, unchanged, through the proxy: each CLI installs
	// the version the page showed, the files as pushed, and validates.
	registryConfig := root.Usage.Registry + "\n" + sub.Usage.Registry + "\n" + plain.Usage.Registry
	wantFiles := readTree(t, greeter["1.1.0"])
	wantPlain := readTree(t, plainDir)
	var fromProxy map[string]string
	for _, c := range clis {
		t.Run(c.name, func(t *testing.T) {
			cli := c.new(t, "")
			dir := testenv.WriteConfig(t, map[string]string{"main.tf": registryConfig})
			out := cli.Run(t, dir, "init", "-input=false", "-no-color")
			got := installedModules(t, dir)
			want := map[string][3]string{
				"greeter": {host + "/acme/greeter/generic", "1.1.0", ".terraform/modules/greeter"},
				"sub":     {host + "/acme/greeter/generic//modules/sub", "1.1.0", ".terraform/modules/sub/modules/sub"},
				"plain":   {host + "/acme/plain/generic", "0.3.0", ".terraform/modules/plain"},
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("modules.json %v, want %v\ninit:\n%s", got, want, out)
			}
			files := readTree(t, filepath.Join(dir, ".terraform", "modules", "greeter"))
			if !reflect.DeepEqual(files, wantFiles) {
				t.Errorf("installed greeter %v differs from 1.1.0's directory %v", keys(files), keys(wantFiles))
			}
			if c.name == "tofu" {
				fromProxy = files
			}
			if files := readTree(t, filepath.Join(dir, ".terraform", "modules", "plain")); !reflect.DeepEqual(files, wantPlain) {
				t.Errorf("installed plain %v differs from its directory %v", keys(files), keys(wantPlain))
			}
			if out := cli.Run(t, dir, "validate", "-no-color"); !strings.Contains(out, "The configuration is valid") {
				t.Errorf("validate:\n%s", out)
			}
		})
	}
	if !strings.Contains(s.logs.String(), "handler=module_archives") {
		t.Errorf("the packages did not come through the proxy's archive URLs:\n%s", s.logs.String())
	}

	// The oci:// snippets, unchanged, straight from the registry: tofu
	// installs the same package.
	t.Run("tofu oci", func(t *testing.T) {
		for _, m := range []catalogModule{root, sub, plain} {
			tag := "?tag=" + m.Version + `"`
			if !strings.Contains(m.Usage.OCI, `"oci://`+m.Repository) || !strings.Contains(m.Usage.OCI, tag) {
				t.Errorf("%s%s oci snippet does not name %s%s:\n%s", m.Address, m.Dir, m.Repository, tag, m.Usage.OCI)
			}
		}
		tofu := testenv.Tofu(t, "")
		dir := testenv.WriteConfig(t, map[string]string{"main.tf": root.Usage.OCI + "\n" + sub.Usage.OCI + "\n" + plain.Usage.OCI})
		out := tofu.Run(t, dir, "init", "-input=false", "-no-color")
		for _, want := range []string{
			"Downloading oci://" + reg.Host + "/modules/acme/greeter/generic?tag=1.1.0 for greeter",
			"- sub in .terraform/modules/sub/modules/sub",
			"Downloading oci://" + reg.Host + "/modules/acme/plain/generic?tag=0.3.0 for plain",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("tofu init output lacks %q:\n%s", want, out)
			}
		}
		files := readTree(t, filepath.Join(dir, ".terraform", "modules", "greeter"))
		if !reflect.DeepEqual(files, wantFiles) || fromProxy != nil && !reflect.DeepEqual(files, fromProxy) {
			t.Errorf("oci:// installed %v, the proxy %v, the directory %v", keys(files), keys(fromProxy), keys(wantFiles))
		}
		if files := readTree(t, filepath.Join(dir, ".terraform", "modules", "sub")); !reflect.DeepEqual(files, wantFiles) {
			t.Errorf("oci:// //modules/sub installed %v, want the package %v", keys(files), keys(wantFiles))
		}
		if files := readTree(t, filepath.Join(dir, ".terraform", "modules", "plain")); !reflect.DeepEqual(files, wantPlain) {
			t.Errorf("oci:// installed plain %v, want %v", keys(files), keys(wantPlain))
		}
		if out := tofu.Run(t, dir, "validate", "-no-color"); !strings.Contains(out, "The configuration is valid") {
			t.Errorf("validate:\n%s", out)
		}
	})
}

func sortedStrings(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
