package names_test

import (
	"fmt"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Versions are tags with '+' written as '_'; only the canonical spelling
// is the tag OpenTofu resolves.
func ExampleTagForVersion() {
	v, _ := names.ParseVersion("1.0.0+build.5")
	fmt.Println(names.TagForVersion(v))
	back, ok := names.VersionFromTag("1.0.0_build.5")
	fmt.Println(back, ok)
	// Output:
	// 1.0.0_build.5
	// 1.0.0+build.5 true
}

// OpenTofu's oci_mirror lists tags leniently: "1.2" is version 1.2.0,
// whose canonical tag it will then look for.
func ExampleListedVersion() {
	for _, tag := range []string{"1.2", "v1.2.3", "latest"} {
		v, ok := names.ListedVersion(tag)
		fmt.Println(tag, v, ok, names.CanonicalTag(tag))
	}
	// Output:
	// 1.2 1.2.0 true false
	// v1.2.3 0.0.0 false false
	// latest 0.0.0 false false
}

// SelectVersion chooses as tofu init does: the newest release meeting
// the constraints, or the locked version while it still meets them.
func ExampleSelectVersion() {
	var available names.VersionList
	for _, s := range []string{"1.0.0", "1.2.5", "1.3.0-rc1", "2.0.0"} {
		available = append(available, names.MustParseVersion(s))
	}
	spec, _ := names.ParseConstraints(">= 1.0, ~> 1.2.0")
	v, _ := names.SelectVersion(available, spec, nil)
	fmt.Println(v, names.ConstraintsString(spec))
	// Output:
	// 1.2.5 >= 1.0.0, ~> 1.2.0
}

// Short provider addresses name a default registry host: OpenTofu's, or
// Terraform's for Terraform users.
func ExampleParseProviderOn() {
	p, _ := names.ParseProvider("acme/widgets")
	t, _ := names.ParseProviderOn("acme/widgets", names.TerraformRegistryHost)
	fmt.Println(p)
	fmt.Println(t)
	// Output:
	// registry.opentofu.org/acme/widgets
	// registry.terraform.io/acme/widgets
}
