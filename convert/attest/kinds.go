package attest

import (
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// PredicateType is the in-toto predicate type of the attestation
// oci-tofu writes for a release of kind (push and mirror --attest-key),
// the one admission and the policy's signers and min_age read: "" for a
// kind it does not attest. The types are defined beside their predicates
// (release.ProviderPredicateType, modulepkg.PredicateType,
// release.TofuPredicateType).
func PredicateType(kind names.Kind) string {
	switch kind {
	case names.KindProvider:
		return release.ProviderPredicateType
	case names.KindModule:
		return modulepkg.PredicateType
	case names.KindTofu:
		return release.TofuPredicateType
	}
	return ""
}
