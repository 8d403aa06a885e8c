package tfconfig_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
)

func TestDetectClient(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		dirs  []string
		want  tfconfig.Client
		why   string
	}{
		{"Terraform's keys", map[string]string{".terraform.lock.hcl": `provider "registry.terraform.io/hashicorp/aws" { version = "1.0.0" }`}, nil, tfconfig.Terraform, "the existing .terraform.lock.hcl"},
		{"tofu's keys win over a Terraform header", map[string]string{".terraform.lock.hcl": "# This file is maintained automatically by \"terraform init\".\nprovider \"registry.opentofu.org/hashicorp/aws\" {\n  version = \"1.0.0\"\n}\n"}, nil, tfconfig.Tofu, "the existing .terraform.lock.hcl"},
		{"Terraform's header", map[string]string{".terraform.lock.hcl": "# This file is maintained automatically by \"terraform init\".\nprovider \"example.com/a/b\" {\n  version = \"1.0.0\"\n}\n"}, nil, tfconfig.Terraform, "the existing .terraform.lock.hcl"},
		{".tofu files", map[string]string{"main.tofu": ""}, nil, tfconfig.Tofu, ".tofu files"},
		{"Terraform's provider cache", map[string]string{"main.tf": ""}, []string{".terraform/providers/registry.terraform.io/hashicorp"}, tfconfig.Terraform, "the provider cache in .terraform"},
		{"nothing to go by", map[string]string{"main.tf": ""}, nil, tfconfig.Tofu, "default"},
		{"an unreadable lock file", map[string]string{".terraform.lock.hcl": "provider {"}, nil, tfconfig.Tofu, "default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeTree(t, tc.files)
			for _, d := range tc.dirs {
				if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if got, why := tfconfig.DetectClient(dir); got != tc.want || why != tc.why {
				t.Errorf("got %s (%s), want %s (%s)", got, why, tc.want, tc.why)
			}
		})
	}
}
