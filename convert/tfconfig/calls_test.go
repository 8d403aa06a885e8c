package tfconfig

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

func TestRegistryModuleCalls(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.tf", `
module "vpc" {
  source  = "terraform-aws-modules/vpc/aws"
  version = "~> 5.0"
}
module "corp" {
  source  = "tf.corp.example:8443/net/subnet/aws//modules/x"
  version = "1.2.0"
}
module "ip" {
  source = "127.0.0.1:9443/acme/greeting/aws"
}
module "git" {
  source = "git::https://example.com/x.git?ref=v1"
}
module "gh" {
  source = "github.com/acme/vpc"
}
module "ghreg" {
  source = "github.com/acme/vpc/aws"
}
module "local" {
  source = "./local"
}
module "again" {
  source = "./local"
}
`)
	write("local/main.tf", `
module "inner" {
  source  = "acme/inner/aws"
  version = ">= 2.0"
}
`)
	for _, c := range []struct {
		client Client
		host   string
	}{{Tofu, "registry.opentofu.org"}, {Terraform, "registry.terraform.io"}} {
		calls, err := RegistryModuleCalls(dir, Options{Client: c.client})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, mc := range calls {
			got[mc.Key] = mc.Host + "/" + mc.Module.String() + " " + names.ConstraintsString(mc.Constraints)
		}
		want := map[string]string{
			"vpc":         c.host + "/terraform-aws-modules/vpc/aws ~> 5.0",
			"corp":        "tf.corp.example:8443/net/subnet/aws 1.2.0",
			"ip":          "127.0.0.1:9443/acme/greeting/aws ",
			"local.inner": c.host + "/acme/inner/aws >= 2.0.0",
			"again.inner": c.host + "/acme/inner/aws >= 2.0.0",
		}
		if len(got) != len(want) {
			t.Errorf("%s: calls %v, want %v", c.client, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", c.client, k, got[k], v)
			}
		}
	}
}
