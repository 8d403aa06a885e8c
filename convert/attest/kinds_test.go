package attest

import (
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

func TestPredicateType(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range []names.Kind{names.KindProvider, names.KindModule, names.KindTofu} {
		pt := PredicateType(k)
		if pt == "" || seen[pt] {
			t.Errorf("%s: predicate type %q (empty or shared)", k, pt)
		}
		seen[pt] = true
	}
	if pt := PredicateType("other"); pt != "" {
		t.Errorf("an unknown kind has predicate type %q", pt)
	}
}
