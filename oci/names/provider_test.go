package names_test

import (
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

func TestParseProvider(t *testing.T) {
	for in, want := range map[string]string{
		"aws":                          "registry.opentofu.org/hashicorp/aws",
		"Hashicorp/AWS":                "registry.opentofu.org/hashicorp/aws",
		"example.com/acme/widget":      "example.com/acme/widget",
		"localhost:8443/acme/widget":   "localhost:8443/acme/widget",
		"registry.example.com/a-b/c-d": "registry.example.com/a-b/c-d",
	} {
		a, err := names.ParseProvider(in)
		if err != nil || a.String() != want {
			t.Errorf("%s: %v %v", in, a, err)
		}
	}
	// Addresses name directories in export and repositories in templates:
	// nothing that could climb out of them.
	for _, bad := range []string{"../acme/x", "./acme/x", "a/b/c/d", "host/../x", "host/a/..", "ho st/a/x", "user@host/a/x", "host/a_b/x", "", "host//x"} {
		if a, err := names.ParseProvider(bad); err == nil {
			t.Errorf("%q accepted as %s", bad, a)
		}
	}
	// Terraform reads short addresses on its own registry.
	if a, _ := names.ParseProviderOn("acme/widgets", names.TerraformRegistryHost); a.String() != "registry.terraform.io/acme/widgets" {
		t.Errorf("terraform short address: %s", a)
	}
}
