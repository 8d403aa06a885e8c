package e2e

import (
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// requirementCase is a configuration whose provider requirements (or
// errors) oci-tofu must read exactly as the clients do. No registry is
// involved: `tofu providers` and `terraform providers` print what each
// client requires, module by module, after `get` installed the modules.
type requirementCase struct {
	name  string
	files map[string]string
	// clients to compare with (both when empty).
	clients []tfconfig.Client
	// fails: the clients refuse the configuration, with summary when set
	// (lock must refuse it with the same summary).
	fails   bool
	summary string
}

var requirementCorpus = []requirementCase{{
	name: "implied providers of every kind of block",
	files: map[string]string{"main.tf": `
resource "aws_instance" "a" {}
data "http" "b" {}
ephemeral "random_password" "c" {
  length = 8
}
provider "google" {}
resource "terraform_data" "builtin" {}
resource "AWS_upper" "d" {}
`},
}, {
	name: "local names, aliases, for_each providers and configuration_aliases",
	files: map[string]string{
		"main.tf": `
terraform {
  required_providers {
    mycloud = { source = "acme/cloud", version = "~> 2.0" }
    aws     = { source = "hashicorp/aws" }
  }
}
provider "mycloud" {
  alias = "west"
}
resource "mycloud_server" "a" {}
resource "cloud_server" "b" {}
resource "other_thing" "c" { provider = mycloud.west }
resource "quoted_thing" "q" { provider = "mycloud.west" }
module "child" {
  source    = "./child"
  providers = { cloud.x = mycloud.west }
}
`,
		"child/main.tf": `
terraform {
  required_providers {
    cloud = {
      source                = "acme/cloud"
      version               = ">= 2.1"
      configuration_aliases = [cloud.x]
    }
  }
}
resource "cloud_thing" "e" { provider = cloud.x }
`,
	},
}, {
	// OpenTofu 1.9 added provider for_each and instance keys.
	name: "provider for_each and instance keys (tofu)",
	files: map[string]string{"main.tf": `
provider "aws" {
  alias    = "by_region"
  for_each = toset(["a", "b"])
}
resource "aws_thing" "d" {
  for_each = toset(["a"])
  provider = aws.by_region[each.key]
}
`},
	clients: []tfconfig.Client{tfconfig.Tofu},
}, {
	name: "provider for_each (Terraform refuses it)",
	files: map[string]string{"main.tf": `
provider "aws" {
  alias    = "by_region"
  for_each = toset(["a", "b"])
}
`},
	clients: []tfconfig.Client{tfconfig.Terraform},
	fails:   true,
	summary: "Reserved argument name in provider block",
}, {
	name: "check blocks and imports in the root module",
	files: map[string]string{"main.tf": `
resource "aws_vpc" "v" {}
check "health" {
  data "http" "probe" {
    url = "https://example.com"
  }
  assert {
    condition     = data.http.probe.status_code == 200
    error_message = "down"
  }
}
import {
  to = aws_vpc.v
  id = "vpc-1"
}
import {
  to       = google_compute_network.n
  id       = "n"
  provider = gcp
}
`},
}, {
	// tofu adds the implied provider of an import into a child module to
	// the module holding the import block; Terraform leaves it to the
	// child. Both require it overall here, through the child's resource.
	name: "an import into a child module",
	files: map[string]string{
		"main.tf": `
module "net" { source = "./net" }
import {
  to = module.net.aws_vpc.main["a"]
  id = "vpc-1"
}
`,
		"net/main.tf": `resource "aws_vpc" "main" { for_each = toset(["a"]) }`,
	},
}, {
	// Where it matters: the imported resource's provider is required by
	// tofu (in the calling module) and not by Terraform.
	name: "an import into a child module that has no such resource",
	files: map[string]string{
		"main.tf": `
module "net" { source = "./net" }
import {
  to = module.net.google_network.n
  id = "n"
}
`,
		"net/main.tf": `resource "aws_vpc" "main" {}`,
	},
}, {
	name: "legacy string requirements and every constraint form",
	files: map[string]string{
		"main.tf": `
terraform {
  required_providers {
    aws    = "~>5.0"
    null   = 3
    random = { version = ">=1.0,<2" }
    tls    = { version = "= 4.0.1" }
    http   = { version = "> 3.0.0-beta, != 3.1.0" }
    local  = { source = "hashicorp/local", version = "2.4.0" }
  }
}
module "a" { source = "./a" }
`,
		"a/main.tf": `
terraform {
  required_providers {
    aws    = { version = ">= 5.1, ~> 5.0" }
    random = { version = "~> 1.2" }
  }
}
provider "tls" { version = "~> 4.0" }
`,
	},
}, {
	name: "nested modules, a module outside the root, count and for_each",
	files: map[string]string{
		"root/main.tf": `
module "a" {
  source = "./a"
  count  = 2
}
module "b" {
  source   = "../shared/b"
  for_each = toset(["x"])
}
`,
		"root/a/main.tf":     `module "deeper" { source = "./deeper" }`,
		"root/a/deeper/x.tf": `resource "null_resource" "n" {}`,
		"shared/b/main.tf":   `module "c" { source = "../c" }` + "\n" + `data "external" "e" { program = ["true"] }`,
		"shared/c/main.tf":   `resource "random_id" "r" { byte_length = 2 }`,
	},
}, {
	name: "override files: requirements, resources, provider versions and module sources",
	files: map[string]string{
		"main.tf": `
terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = "~> 4.0" }
  }
}
resource "aws_instance" "a" {}
provider "aws" {}
module "m" { source = "./one" }
`,
		"override.tf": `
terraform {
  required_providers {
    aws = { source = "hashicorp/aws", version = "~> 5.0" }
  }
}
resource "aws_instance" "a" { provider = gcp }
`,
		"x_override.tf": `
provider "aws" { version = "> 5.1" }
module "m" { source = "./two" }
`,
		"one/main.tf": `resource "null_resource" "n" {}`,
		"two/main.tf": `resource "random_id" "r" { byte_length = 2 }`,
	},
}, {
	name: ".tofu files hide .tf files (tofu); Terraform reads .tf only",
	files: map[string]string{
		"main.tf":         `resource "aws_instance" "a" {}`,
		"main.tofu":       `resource "google_instance" "a" {}`,
		"extra.tofu.json": `{"resource": {"null_resource": {"n": {}}}}`,
		"extra.tf.json":   `{"resource": {"random_id": {"r": {"byte_length": 2}}}}`,
	},
}, {
	name: "JSON syntax with provider references",
	files: map[string]string{"main.tf.json": `{
  "terraform": {"required_providers": {"hello": {"source": "example.com/test/hello", "version": ">= 1.0"}}},
  "provider": {"hello": [{"alias": "x"}]},
  "resource": {"aws_instance": {"a": {"provider": "hello.x"}}},
  "data": {"http": {"b": {}}}
}`},
}, {
	name: "hidden and editor files are ignored",
	files: map[string]string{
		"main.tf":   `resource "aws_instance" "a" {}`,
		".x.tf":     `resource "google_instance" "a" {}`,
		"main.tf~":  `resource "null_resource" "a" {}`,
		"#main.tf#": `resource "random_id" "a" {}`,
	},
}, {
	name: "a module source from a local value (tofu evaluates it statically)",
	files: map[string]string{
		"main.tf": `
locals { where = "./m" }
module "m" { source = local.where }
`,
		"m/main.tf": `resource "null_resource" "n" {}`,
	},
	clients: []tfconfig.Client{tfconfig.Tofu},
}, {
	name:    "two required_providers blocks",
	files:   map[string]string{"a.tf": reqBlock(`aws = { source = "hashicorp/aws" }`), "b.tf": reqBlock(`null = { source = "hashicorp/null" }`)},
	fails:   true,
	summary: "Duplicate required providers configuration",
}, {
	name:    "two required_providers blocks in a child module",
	files:   map[string]string{"main.tf": `module "c" { source = "./c" }`, "c/a.tf": reqBlock(`aws = {}`), "c/b.tf": reqBlock(`null = {}`)},
	fails:   true,
	summary: "Duplicate required providers configuration",
}, {
	name:    "an empty version constraint",
	files:   map[string]string{"main.tf": reqBlock(`aws = { source = "hashicorp/aws", version = "" }`)},
	fails:   true,
	summary: "Invalid version constraint",
}, {
	name:    "a constraint only one of tofu's two parsers reads",
	files:   map[string]string{"main.tf": reqBlock(`aws = { source = "hashicorp/aws", version = "v1.2.3" }`)},
	fails:   true,
	summary: "Invalid version constraint",
}, {
	name:    "an invalid source",
	files:   map[string]string{"main.tf": reqBlock(`aws = { source = "a/b/c/d" }`)},
	fails:   true,
	summary: "Invalid provider source string",
}, {
	name:    "a provider local name that is not normalized",
	files:   map[string]string{"main.tf": reqBlock(`AWS = { source = "hashicorp/aws" }`)},
	fails:   true,
	summary: "Invalid provider local name",
}, {
	name:    "duplicate provider configurations",
	files:   map[string]string{"main.tf": "provider \"aws\" {}\nprovider \"aws\" {}\n"},
	fails:   true,
	summary: "Duplicate provider configuration",
}, {
	name:    "required_providers outside terraform",
	files:   map[string]string{"main.tf": "required_providers {\n  aws = {}\n}\n"},
	fails:   true,
	summary: "Invalid required_providers block",
}, {
	name:    "an unknown block type",
	files:   map[string]string{"main.tf": `resorce "aws_instance" "a" {}`},
	fails:   true,
	summary: "Unsupported block type",
}, {
	name:    "a provider reference with too many parts",
	files:   map[string]string{"main.tf": `resource "aws_instance" "a" { provider = aws.west.x.y }`},
	fails:   true,
	summary: "Invalid provider configuration reference",
}, {
	name:    "a configuration alias of another provider",
	files:   map[string]string{"main.tf": reqBlock(`aws = { source = "hashicorp/aws", configuration_aliases = [google.x] }`)},
	fails:   true,
	summary: "Invalid configuration_aliases value",
}, {
	name:    "an override of a resource that does not exist",
	files:   map[string]string{"main.tf": `resource "aws_instance" "a" {}`, "override.tf": `resource "aws_instance" "b" {}`},
	fails:   true,
	summary: "Missing resource to override",
}, {
	name:    "a version on a local module",
	files:   map[string]string{"main.tf": "module \"m\" {\n  source  = \"./m\"\n  version = \"1.0.0\"\n}\n", "m/main.tf": ""},
	fails:   true,
	summary: "Invalid registry module source address",
}, {
	name:    "a local module directory that does not exist",
	files:   map[string]string{"main.tf": `module "m" { source = "./nowhere" }`},
	fails:   true,
	summary: "Unreadable module directory",
}, {
	name:    "a terraform- prefixed provider type",
	files:   map[string]string{"main.tf": reqBlock(`x = { source = "acme/terraform-provider-x" }`)},
	fails:   true,
	summary: "",
}}

func reqBlock(entries string) string {
	return "terraform {\n  required_providers {\n    " + entries + "\n  }\n}\n"
}

var providerLineRE = regexp.MustCompile(`provider\[([^\]]+)\]\s*(.*)$`)

// clientRequirements runs `get` and `providers`, and returns every
// installable provider the client requires with its constraints combined
// (normalised as lock files write them); ok is false when the client
// refuses the configuration, out is then its output.
func clientRequirements(t *testing.T, c tfconfig.Client, dir string) (reqs map[string]string, out string, ok bool) {
	cli := newCLI(t, c, "")
	if out, err := cli.Try(t, dir, "get", "-no-color"); err != nil {
		return nil, out, false
	}
	out, err := cli.Try(t, dir, "providers", "-no-color")
	if err != nil {
		return nil, out, false
	}
	all := map[string]names.Constraints{}
	for _, line := range strings.Split(out, "\n") {
		m := providerLineRE.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(m[1], "terraform.io/builtin/") {
			continue
		}
		cons, err := names.ParseConstraints(strings.TrimSpace(m[2]))
		if err != nil {
			t.Fatalf("%s providers printed %q: %v", c, line, err)
		}
		all[m[1]] = append(all[m[1]], cons...)
	}
	reqs = map[string]string{}
	for addr, cons := range all {
		reqs[addr] = names.ConstraintsString(cons)
	}
	return reqs, out, true
}

// TestLockReadsConfigurationsAsClientsDo compares the providers
// tfconfig.Load finds (and the errors it reports) with what real tofu and
// terraform print for the same configuration.
func TestLockReadsConfigurationsAsClientsDo(t *testing.T) {
	for _, tc := range requirementCorpus {
		clients := tc.clients
		if len(clients) == 0 {
			clients = bothClients()
		}
		for _, c := range clients {
			t.Run(tc.name+"/"+string(c), func(t *testing.T) {
				t.Parallel()
				w := newWorkspace(t, tc.files)
				theirs, out, ok := clientRequirements(t, c, w.dir)
				cfg, err := tfconfig.Load(w.dir, tfconfig.Options{Client: c})
				switch {
				case tc.fails && ok:
					t.Fatalf("%s accepted the configuration (the case says it fails):\n%s", c, out)
				case !tc.fails && !ok:
					t.Fatalf("%s refused the configuration:\n%s", c, out)
				case !ok:
					checkSameError(t, c, err, out, tc.summary)
					return
				case err != nil:
					t.Fatalf("%s accepted the configuration, lock refused it: %v", c, err)
				}
				ours := map[string]string{}
				for _, r := range cfg.Requirements {
					ours[r.Addr.String()] = names.ConstraintsString(r.Constraints)
				}
				if !maps.Equal(ours, theirs) {
					t.Errorf("requirements differ\n  %s: %v\n  lock: %v\n%s", c, theirs, ours, out)
				}
			})
		}
	}
}

// checkSameError: the client refused the configuration, so must lock, and
// with the client's own summary.
func checkSameError(t *testing.T, c tfconfig.Client, err error, clientOut, summary string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s refused the configuration, lock accepted it:\n%s", c, clientOut)
	}
	var diags hcl.Diagnostics
	var ours []string
	errors.As(err, &diags)
	for _, d := range diags {
		ours = append(ours, d.Summary)
	}
	if summary == "" {
		return
	}
	if !slices.Contains(ours, summary) || !strings.Contains(clientOut, "Error: "+summary) {
		t.Errorf("want %q from both\n  %s said:\n%s\n  lock said: %v", summary, c, clientOut, err)
	}
}
