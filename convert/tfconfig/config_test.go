package tfconfig_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// writeTree writes files (path → content) under a new directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// summary renders requirements as "address constraints" lines.
func summary(reqs []tfconfig.Requirement) string {
	var lines []string
	for _, r := range reqs {
		lines = append(lines, strings.TrimSpace(r.Addr.String()+" "+names.ConstraintsString(r.Constraints)))
	}
	return strings.Join(lines, "\n")
}

const helloReq = `
terraform {
  required_providers {
    hello = {
      source  = "example.com/test/hello"
      version = "%s"
    }
  }
}
`

// reqs is a terraform block with one required_providers block holding entries.
func reqs(entries string) string {
	return "terraform {\n  required_providers {\n    " + entries + "\n  }\n}\n"
}

func hello(constraint string) string { return strings.Replace(helloReq, "%s", constraint, 1) }

// Expected results follow OpenTofu's configs package (v1.12): the e2e
// differential suite checks the same rules against the real binaries.
func TestLoadRequirements(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client tfconfig.Client
		files  map[string]string
		want   string
	}{{
		name: "root and local child constraints combine",
		files: map[string]string{
			"main.tf":       hello(">= 1.0") + `module "child" { source = "./child" }`,
			"child/main.tf": hello("~> 1.2.0"),
		},
		want: "example.com/test/hello >= 1.0.0, ~> 1.2.0",
	}, {
		name: "providers only in nested local modules, one outside the root",
		files: map[string]string{
			"root/main.tf":          `module "a" { source = "./a" }`,
			"root/a/main.tf":        `module "b" { source = "../../shared/b" }`,
			"shared/b/versions.tf":  hello("!= 1.1.0"),
			"shared/b/resources.tf": `resource "hello_world" "x" {}`,
		},
		want: "example.com/test/hello != 1.1.0",
	}, {
		name: "implied providers from resources, data, ephemeral and provider blocks",
		files: map[string]string{"main.tf": `
resource "aws_instance" "a" {}
data "http" "b" {}
ephemeral "random_password" "c" {}
provider "google" { region = "x" }
resource "terraform_data" "builtin" {}
`},
		want: "registry.opentofu.org/hashicorp/aws\nregistry.opentofu.org/hashicorp/google\nregistry.opentofu.org/hashicorp/http\nregistry.opentofu.org/hashicorp/random",
	}, {
		name:   "terraform reads short and implied addresses on its own registry",
		client: tfconfig.Terraform,
		files: map[string]string{"main.tf": `
terraform {
  required_providers {
    widgets = { source = "acme/widgets", version = "~> 1.0" }
  }
}
resource "aws_instance" "a" {}
`},
		want: "registry.terraform.io/acme/widgets ~> 1.0\nregistry.terraform.io/hashicorp/aws",
	}, {
		name: "a local name differing from the type: resources follow the local name",
		files: map[string]string{"main.tf": `
terraform {
  required_providers {
    mycloud = { source = "acme/cloud" }
  }
}
resource "mycloud_server" "a" {}
resource "cloud_server" "b" {}
resource "other_thing" "c" { provider = mycloud.west }
resource "quoted_thing" "d" { provider = "mycloud.west" }
provider "mycloud" {
  alias = "west"
}
`},
		want: "registry.opentofu.org/acme/cloud\nregistry.opentofu.org/hashicorp/cloud",
	}, {
		name: "configuration_aliases and a provider block version",
		files: map[string]string{"main.tf": `
terraform {
  required_providers {
    hello = {
      source                = "example.com/test/hello"
      configuration_aliases = [hello.a, hello.b]
    }
  }
}
provider "hello" {
  version = "~> 1.0"
}
`},
		want: "example.com/test/hello ~> 1.0",
	}, {
		name: "legacy string requirement and a numeric version",
		files: map[string]string{"main.tf": `
terraform {
  required_providers {
    aws = "~> 5.0"
    null = 3
  }
}
`},
		want: "registry.opentofu.org/hashicorp/aws ~> 5.0\nregistry.opentofu.org/hashicorp/null 3.0.0",
	}, {
		name: "override files replace whole required_providers entries",
		files: map[string]string{
			"main.tf":     hello("~> 1.0"),
			"override.tf": reqs(`hello = { source = "example.com/test/hello", version = "1.1.0" }`),
		},
		want: "example.com/test/hello 1.1.0",
	}, {
		name: "a resource override changes its provider",
		files: map[string]string{
			"main.tf":          `resource "aws_instance" "a" {}`,
			"main_override.tf": `resource "aws_instance" "a" { provider = gcp }`,
		},
		want: "registry.opentofu.org/hashicorp/gcp",
	}, {
		name: "tofu: a .tofu file hides the .tf file of the same name",
		files: map[string]string{
			"main.tf":   hello("~> 1.0"),
			"main.tofu": hello("~> 2.0"),
		},
		want: "example.com/test/hello ~> 2.0",
	}, {
		name:   "terraform: .tofu files do not exist",
		client: tfconfig.Terraform,
		files: map[string]string{
			"main.tf":   hello("~> 1.0"),
			"main.tofu": hello("~> 2.0"),
			"x.tofu":    `resource "aws_instance" "a" {}`,
		},
		want: "example.com/test/hello ~> 1.0",
	}, {
		name: "JSON syntax",
		files: map[string]string{"main.tf.json": `{
  "terraform": {"required_providers": {"hello": {"source": "example.com/test/hello", "version": ">= 1.0"}}},
  "resource": {"aws_instance": {"a": {"provider": "hello.x"}}},
  "data": {"http": {"b": {}}}
}`},
		want: "example.com/test/hello >= 1.0.0\nregistry.opentofu.org/hashicorp/http",
	}, {
		name: "check blocks' data sources and import blocks",
		files: map[string]string{"main.tf": `
check "health" {
  data "http" "probe" {}
  assert {
    condition     = true
    error_message = "x"
  }
}
import {
  to = module.net.aws_vpc.main["a"]
  id = "vpc-1"
}
import {
  to       = google_compute_network.n
  id       = "n"
  provider = gcp.eu
}
`},
		want: "registry.opentofu.org/hashicorp/aws\nregistry.opentofu.org/hashicorp/gcp\nregistry.opentofu.org/hashicorp/http",
	}, {
		name: "test files' provider blocks",
		files: map[string]string{
			"main.tf":                `resource "aws_instance" "a" {}`,
			"tests/main.tftest.hcl":  `provider "random" {}` + "\n" + `run "x" {}`,
			"other.tofutest.hcl":     `provider "null" {}`,
			"tests/ignored.tftest.x": `provider "nothing" {}`,
		},
		want: "registry.opentofu.org/hashicorp/aws\nregistry.opentofu.org/hashicorp/null\nregistry.opentofu.org/hashicorp/random",
	}, {
		name: "lock file order is host, namespace, type",
		files: map[string]string{"main.tf": `
terraform {
  required_providers {
    a  = { source = "example.com/a/x" }
    ab = { source = "example.com/a-b/x" }
  }
}
`},
		want: "example.com/a/x\nexample.com/a-b/x",
	}, {
		name: "hidden, backup and editor files are ignored",
		files: map[string]string{
			"main.tf":    hello("1.0.0"),
			".hidden.tf": `resource "aws_instance" "a" {}`,
			"main.tf~":   `resource "aws_instance" "a" {}`,
			"#main.tf#":  `resource "aws_instance" "a" {}`,
		},
		want: "example.com/test/hello 1.0.0",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, tc.files)
			if _, ok := tc.files["root/main.tf"]; ok {
				dir = filepath.Join(dir, "root")
			}
			cfg, err := tfconfig.Load(dir, tfconfig.Options{Client: tc.client})
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(cfg.Requirements); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// Errors carry OpenTofu's own summaries.
func TestLoadErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string // summary
		also  string // in the text
	}{
		{"two required_providers blocks", map[string]string{"a.tf": hello("1.0.0"), "b.tf": reqs(`x = { source = "a/x" }`)}, "Duplicate required providers configuration", ""},
		{"empty version", map[string]string{"main.tf": hello("")}, "Invalid version constraint", ""},
		{"bad version", map[string]string{"main.tf": hello("~> one")}, "Invalid version constraint", ""},
		{"version not a string", map[string]string{"main.tf": reqs(`x = { source = "a/x", version = 1 }`)}, "Invalid version constraint", ""},
		{"source not a string", map[string]string{"main.tf": reqs(`x = { source = 5 }`)}, "Invalid source", ""},
		{"bad source", map[string]string{"main.tf": reqs(`x = { source = "a/b/c/d" }`)}, "Invalid provider source string", ""},
		{"redundant prefix", map[string]string{"main.tf": reqs(`x = { source = "acme/terraform-provider-x" }`)}, "Invalid provider source string", "terraform-"},
		{"unknown requirement key", map[string]string{"main.tf": reqs(`x = { source = "a/x", region = "y" }`)}, "Invalid required_providers object", ""},
		{"not normalized local name", map[string]string{"main.tf": reqs(`AWS = { source = "a/x" }`)}, "Invalid provider local name", ""},
		{"required_providers outside terraform", map[string]string{"main.tf": `required_providers { x = {} }`}, "Invalid required_providers block", ""},
		{"unknown block", map[string]string{"main.tf": `resorce "x" "y" {}`}, "Unsupported block type", ""},
		{"syntax error", map[string]string{"main.tf": `terraform {`}, "Unclosed configuration block", ""},
		{"duplicate provider configuration", map[string]string{"main.tf": `provider "aws" {}` + "\n" + `provider "aws" {}`}, "Duplicate provider configuration", ""},
		{"duplicate module call", map[string]string{"main.tf": `module "a" { source = "./a" }` + "\n" + `module "a" { source = "./a" }`, "a/main.tf": ""}, "Duplicate module call", ""},
		{"duplicate resource", map[string]string{"main.tf": `resource "aws_instance" "a" {}` + "\n" + `resource "aws_instance" "a" {}`}, `Duplicate resource "aws_instance" configuration`, ""},
		{"bad configuration alias", map[string]string{"main.tf": reqs(`x = { source = "a/x", configuration_aliases = [y.z] }`)}, "Invalid configuration_aliases value", ""},
		{"provider reference with too many parts", map[string]string{"main.tf": `resource "aws_instance" "a" { provider = aws.a.b.c }`}, "Invalid provider configuration reference", ""},
		{"override of nothing", map[string]string{"main.tf": `resource "aws_instance" "a" {}`, "override.tf": `resource "aws_instance" "b" {}`}, "Missing resource to override", ""},
		{"version on the built-in provider", map[string]string{"main.tf": reqs(`terraform = { version = "1.0.0" }`)}, "Invalid provider version constraint", "built-in"},
		{"local module with a version", map[string]string{"main.tf": `module "a" {
  source  = "./a"
  version = "1.0.0"
}`, "a/main.tf": ""}, "Invalid registry module source address", "version"},
		{"missing local module", map[string]string{"main.tf": `module "a" { source = "./nowhere" }`}, "Unreadable module directory", ""},
		{"module without source", map[string]string{"main.tf": `module "a" {}`}, "Missing required argument", ""},
		{"remote module not installed", map[string]string{"main.tf": `module "net" {
  source  = "example.com/acme/net/aws"
  version = "~> 1.0"
}`}, "Module not installed", "tofu init -backend=false"},
		{"computed source not installed", map[string]string{"main.tf": `locals { src = "./a" }
module "a" { source = local.src }`, "a/main.tf": ""}, "Module not installed", "expression"},
		{"a module calling itself", map[string]string{"main.tf": `module "again" { source = "./" }`}, "Module tree too large", "calls itself"},
		{"a module calling itself twice", map[string]string{"main.tf": "module \"a\" { source = \"./\" }\nmodule \"b\" { source = \"./\" }\n"}, "Module tree too large", "calls itself"},
		{"modules calling each other", map[string]string{"main.tf": `module "a" { source = "./a" }`, "a/main.tf": `module "b" { source = "../b" }`, "b/main.tf": `module "a" { source = "../a" }`}, "Module tree too large", "calls itself"},
		{"error in a child module", map[string]string{"main.tf": `module "a" { source = "./a" }`, "a/a.tf": hello("1.0.0"), "a/b.tf": hello("1.0.0")}, "Duplicate required providers configuration", "a/b.tf"},
		{"test run module", map[string]string{"main.tf": "", "tests/x.tftest.hcl": `run "r" {
  module { source = "./testing" }
}`}, "Test run modules are not supported", ""},
		{"no configuration", map[string]string{"README.md": "hi"}, "No configuration files", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tfconfig.Load(writeTree(t, tc.files), tfconfig.Options{})
			var diags hcl.Diagnostics
			if !errors.As(err, &diags) || len(diags) == 0 {
				t.Fatalf("want diagnostics %q, got %v", tc.want, err)
			}
			found := false
			for _, d := range diags {
				found = found || d.Summary == tc.want
			}
			if !found || !strings.Contains(err.Error(), tc.also) {
				t.Errorf("want %q (with %q), got:\n%v", tc.want, tc.also, err)
			}
		})
	}
}

// Installed modules are read from modules.json as the clients read them,
// and refused when the configuration moved on since.
func TestLoadInstalledModules(t *testing.T) {
	manifest := `{"Modules":[
 {"Key":"","Source":"","Dir":"."},
 {"Key":"net","Source":"example.com/acme/net/aws","Version":"1.2.0","Dir":".terraform/modules/net"},
 {"Key":"net.local","Source":"./local","Dir":".terraform/modules/net/local"},
 {"Key":"oci","Source":"oci://example.com/modules/x?tag=1.0.0","Dir":".terraform/modules/oci"},
 {"Key":"computed","Source":"./c","Dir":"c"}
]}`
	files := map[string]string{
		".terraform/modules/modules.json":          manifest,
		".terraform/modules/net/main.tf":           hello("~> 1.2") + `module "local" { source = "./local" }`,
		".terraform/modules/net/local/main.tf":     `resource "aws_instance" "a" {}`,
		".terraform/modules/oci/main.tf":           `data "http" "x" {}`,
		"c/main.tf":                                `provider "null" {}`,
		".terraform/modules/unrelated/main.tf":     `provider "nope" {}`,
		".terraform/modules/net/local/ignored.txt": "",
	}
	call := func(version, ociTag string) string {
		return `
module "net" {
  source  = "example.com/acme/net/aws"
  version = "` + version + `"
}
module "oci" { source = "oci://example.com/modules/x?tag=` + ociTag + `" }
locals { src = "./c" }
module "computed" { source = local.src }
`
	}
	files["main.tf"] = call("~> 1.0", "1.0.0")
	cfg, err := tfconfig.Load(writeTree(t, files), tfconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "example.com/test/hello ~> 1.2\nregistry.opentofu.org/hashicorp/aws\nregistry.opentofu.org/hashicorp/http\nregistry.opentofu.org/hashicorp/null"
	if got := summary(cfg.Requirements); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	var keys []string
	for _, m := range cfg.Modules {
		keys = append(keys, m.Key)
	}
	if strings.Join(keys, ",") != ",computed,net,net.local,oci" {
		t.Errorf("modules %v", keys)
	}

	for _, tc := range []struct{ version, tag, want string }{
		{"~> 2.0", "1.0.0", "Module version requirements have changed"},
		{"~> 1.0", "2.0.0", "Module source has changed"},
	} {
		files["main.tf"] = call(tc.version, tc.tag)
		_, err := tfconfig.Load(writeTree(t, files), tfconfig.Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s/%s: want %q, got %v", tc.version, tc.tag, tc.want, err)
		}
	}
}

// TF_DATA_DIR moves .terraform, as it does for the clients.
func TestLoadHonoursTFDataDir(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"main.tf":                   `module "m" { source = "git::https://example.com/m.git" }`,
		"data/modules/modules.json": `{"Modules":[{"Key":"m","Source":"git::https://example.com/m.git","Dir":"data/modules/m"}]}`,
		"data/modules/m/main.tf":    `provider "null" {}`,
	})
	t.Setenv("TF_DATA_DIR", "data")
	cfg, err := tfconfig.Load(dir, tfconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(cfg.Requirements); got != "registry.opentofu.org/hashicorp/null" {
		t.Errorf("got %s", got)
	}
}

func TestParseClient(t *testing.T) {
	for in, want := range map[string]tfconfig.Client{"tofu": tfconfig.Tofu, "OpenTofu": tfconfig.Tofu, "terraform": tfconfig.Terraform} {
		if got, err := tfconfig.ParseClient(in); err != nil || got != want {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	if _, err := tfconfig.ParseClient("pulumi"); err == nil {
		t.Error("pulumi accepted")
	}
}

// No input makes the reader panic.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{hello("~> 1.0"), `module "a" { source = "./a" }`, `import { to = module.x[0].a_b.c["d"] }`, `{"resource":{"a_b":{"c":{"provider":"x.y[1]"}}}}`, `resource "x" "y" { provider = a.b.c.d }`} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, src string, json bool) {
		name := "main.tf"
		if json {
			name = "main.tf.json"
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		tfconfig.Load(dir, tfconfig.Options{})
	})
}
