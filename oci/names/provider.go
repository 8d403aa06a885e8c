package names

import (
	"fmt"
	"regexp"
	"strings"
)

// Default registry hosts of short provider addresses ("namespace/type").
const (
	OpenTofuRegistryHost  = "registry.opentofu.org"
	TerraformRegistryHost = "registry.terraform.io"
)

// Provider is a provider source address: hostname/namespace/type, lower-case.
type Provider struct{ Hostname, Namespace, Type string }

func (p Provider) String() string { return p.Hostname + "/" + p.Namespace + "/" + p.Type }

// TemplateValues are the repository template placeholders for p.
func (p Provider) TemplateValues() map[string]string {
	return map[string]string{"hostname": p.Hostname, "namespace": p.Namespace, "type": p.Type}
}

// ParseProvider reads "type", "namespace/type" or "hostname/namespace/type"
// as OpenTofu does: lower-cased, short forms on registry.opentofu.org (and
// "type" alone in the hashicorp namespace).
func ParseProvider(s string) (Provider, error) {
	return ParseProviderOn(s, OpenTofuRegistryHost)
}

// ParseProviderOn is ParseProvider with another default host, as Terraform
// reads short addresses on registry.terraform.io.
func ParseProviderOn(s, defaultHost string) (Provider, error) {
	if len(s) > 512 {
		return Provider{}, fmt.Errorf("invalid provider address: longer than 512 bytes")
	}
	parts := strings.Split(strings.ToLower(strings.TrimSpace(s)), "/")
	var p Provider
	switch len(parts) {
	case 1:
		p = Provider{defaultHost, "hashicorp", parts[0]}
	case 2:
		p = Provider{defaultHost, parts[0], parts[1]}
	case 3:
		p = Provider{parts[0], parts[1], parts[2]}
	default:
		return p, fmt.Errorf("invalid provider address %q: want [hostname/]namespace/type", s)
	}
	if !ValidHostname(p.Hostname) || !ValidProviderPart(p.Namespace) || !ValidProviderPart(p.Type) {
		return p, fmt.Errorf("invalid provider address %q", s)
	}
	return p, nil
}

var (
	// hostnameRE is a DNS name (IDNs arrive in punycode) with an optional port.
	hostnameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:[0-9]{1,5})?$`)
	// providerPartRE is a provider namespace or type as OpenTofu accepts
	// it (lower-cased, ASCII): letters, digits and single inner dashes.
	providerPartRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
)

// ValidProviderPart reports whether s is a provider namespace or type:
// lower-case letters and digits, single dashes inside, at most 64 bytes.
func ValidProviderPart(s string) bool { return len(s) <= 64 && providerPartRE.MatchString(s) }

// ValidHostname reports whether s is a host name (lower-case DNS labels)
// with an optional port, as provider and module addresses use them.
func ValidHostname(s string) bool { return len(s) <= 255 && hostnameRE.MatchString(s) }

// ProviderSpec is an address with optional version constraints, as written
// on the command line: "hashicorp/aws@~> 5.0".
type ProviderSpec struct {
	Provider    Provider
	Constraints Constraints
}

// ParseProviderSpec reads ADDRESS[@CONSTRAINT].
func ParseProviderSpec(s string) (ProviderSpec, error) {
	addr, cons, _ := strings.Cut(s, "@")
	p, err := ParseProvider(addr)
	if err != nil {
		return ProviderSpec{}, err
	}
	c, err := ParseConstraints(cons)
	if err != nil {
		return ProviderSpec{}, err
	}
	return ProviderSpec{Provider: p, Constraints: c}, nil
}
