package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// ErrDenied is what every refusal by the policy is (errors.Is): push,
// mirror and lock refuse a version the policy denies with a *DeniedError.
var ErrDenied = errors.New("denied by the policy")

// DeniedError is a version the policy denies, with the decision: the rule
// that decided and why.
type DeniedError struct {
	Kind             names.Kind
	Address, Version string
	Decision         Decision
}

func (e *DeniedError) Error() string {
	what := string(e.Kind) + " " + e.Address
	if e.Kind == names.KindTofu {
		what = "OpenTofu"
	}
	return fmt.Sprintf("the policy's rule %q denies %s %s: %s", e.Decision.Rule, what, e.Version, e.Decision.Reason)
}

// Is makes errors.Is(err, ErrDenied) true.
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

// Check is nil when p allows version of address (a nil Policy allows
// everything), and otherwise a *DeniedError carrying the decision.
func (p *Policy) Check(kind names.Kind, address, version string) error {
	d := p.Decide(kind, address, version)
	if d.Allow {
		return nil
	}
	return &DeniedError{Kind: kind, Address: address, Version: version, Decision: d}
}

// TofuAddress is the address of OpenTofu releases: a tofu rule matches
// it, and it is what Decide and Check are asked about them.
const TofuAddress = "tofu"

// AddressFromRepository is the address the policy matches the artifacts
// of a repository by when nothing else names it: for a provider the last
// two segments of the repository path (namespace/type), for a module the
// last three (namespace/name/system), on names.OpenTofuRegistryHost (a
// repository path names no host); "tofu" for OpenTofu releases. Repository templates end in those names
// (…/${namespace}/${type}), so this is the address they were pushed for.
func AddressFromRepository(kind names.Kind, repository string) (string, error) {
	n := map[names.Kind]int{names.KindProvider: 2, names.KindModule: 3}[kind]
	if kind == names.KindTofu {
		return TofuAddress, nil
	}
	parts := strings.Split(strings.ToLower(strings.Trim(repository, "/")), "/")
	if n == 0 || len(parts) < n {
		return "", fmt.Errorf("the repository %q does not end in the %s's names (%s): name the address the policy should match", repository, kind, map[names.Kind]string{names.KindProvider: "namespace/type", names.KindModule: "namespace/name/system"}[kind])
	}
	return names.OpenTofuRegistryHost + "/" + strings.Join(parts[len(parts)-n:], "/"), nil
}

// ProviderAddress is the address the policy matches a provider by outside
// the proxy (lock, mirror): its hostname without a port, as the proxy
// matches the registry hostname a client reaches (docs/policy.md), then
// namespace/type.
func ProviderAddress(p names.Provider) string {
	return strings.ToLower(names.HostWithoutPort(p.Hostname) + "/" + p.Namespace + "/" + p.Type)
}
