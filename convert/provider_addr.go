package convert

import (
	"fmt"
	"strings"

	"github.com/apparentlymart/go-versions/versions"
	"github.com/apparentlymart/go-versions/versions/constraints"

	"github.com/oci-tofu/oci-tofu/oci"
)

// DefaultProviderHost is where OpenTofu looks for providers given as
// "namespace/type".
const DefaultProviderHost = "registry.opentofu.org"

// ProviderAddr is a provider source address: hostname/namespace/type.
type ProviderAddr struct{ Hostname, Namespace, Type string }

func (a ProviderAddr) String() string { return a.Hostname + "/" + a.Namespace + "/" + a.Type }

// TemplateValues are the repository template placeholders for a.
func (a ProviderAddr) TemplateValues() map[string]string {
	return map[string]string{"hostname": a.Hostname, "namespace": a.Namespace, "type": a.Type}
}

// ParseProviderAddr reads "type", "namespace/type" or
// "hostname/namespace/type", lower-cased as OpenTofu normalises them.
func ParseProviderAddr(s string) (ProviderAddr, error) {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(s)), "/")
	var a ProviderAddr
	switch len(parts) {
	case 1:
		a = ProviderAddr{DefaultProviderHost, "hashicorp", parts[0]}
	case 2:
		a = ProviderAddr{DefaultProviderHost, parts[0], parts[1]}
	case 3:
		a = ProviderAddr{parts[0], parts[1], parts[2]}
	default:
		return a, fmt.Errorf("invalid provider address %q: want [hostname/]namespace/type", s)
	}
	if !oci.ValidHostname(a.Hostname) || !oci.ValidProviderPart(a.Namespace) || !oci.ValidProviderPart(a.Type) {
		return a, fmt.Errorf("invalid provider address %q", s)
	}
	return a, nil
}

// ParseConstraints parses version constraints as OpenTofu does
// ("~> 1.0, >= 1.0.2", "1.2.3", "!= 2.0.0").
func ParseConstraints(s string) (constraints.IntersectionSpec, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	c, err := constraints.ParseRubyStyleMulti(s)
	if err != nil {
		return nil, fmt.Errorf("invalid version constraint %q: %w", s, err)
	}
	return c, nil
}

// ProviderSpec is an address with optional version constraints, as written
// on the command line: "hashicorp/aws@~> 5.0".
type ProviderSpec struct {
	Addr        ProviderAddr
	Constraints constraints.IntersectionSpec
}

// ParseProviderSpec reads ADDRESS[@CONSTRAINT].
func ParseProviderSpec(s string) (ProviderSpec, error) {
	addr, cons, _ := strings.Cut(s, "@")
	a, err := ParseProviderAddr(addr)
	if err != nil {
		return ProviderSpec{}, err
	}
	c, err := ParseConstraints(cons)
	if err != nil {
		return ProviderSpec{}, err
	}
	return ProviderSpec{Addr: a, Constraints: c}, nil
}

// MatchingVersions returns every version of list meeting the constraints
// (all released versions when there are none), oldest first. Pre-releases
// count only when named exactly, as in OpenTofu.
func MatchingVersions(list versions.List, spec constraints.IntersectionSpec) versions.List {
	allowed := versions.Released
	if len(spec) > 0 {
		allowed = versions.MeetingConstraints(spec)
	}
	var out versions.List
	for _, v := range list {
		if allowed.Has(v) {
			out = append(out, v)
		}
	}
	out.Sort()
	return out
}
