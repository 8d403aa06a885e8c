package ingest

import "testing"

// A module to mirror is HOST/NAMESPACE/NAME/SYSTEM, with constraints or
// without; a short address or a bad constraint is refused.
func TestParseModuleSpec(t *testing.T) {
	s, err := ParseModuleSpec("registry.opentofu.org/terraform-aws-modules/vpc/aws@~> 5.0")
	if err != nil || s.String() != "registry.opentofu.org/terraform-aws-modules/vpc/aws" || s.Constraints == nil || s.Newest {
		t.Errorf("%+v, %v", s, err)
	}
	if s, err := ParseModuleSpec("example.com/a/b/c"); err != nil || s.Constraints != nil {
		t.Errorf("no constraint: %+v, %v", s, err)
	}
	for _, bad := range []string{"terraform-aws-modules/vpc/aws", "example.com/a/b/c@banana"} {
		if _, err := ParseModuleSpec(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
