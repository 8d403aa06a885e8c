package assistant

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// VerdictIn are get_policy_verdict's arguments.
type VerdictIn struct {
	Address string `json:"address" jsonschema:"a module ([HOST/]NAMESPACE/NAME/SYSTEM) or a provider ([HOST/]NAMESPACE/TYPE)"`
	Version string `json:"version" jsonschema:"the version to judge"`
	Kind    string `json:"kind,omitempty" jsonschema:"module or provider (default: four parts, or three whose first is no host name, are a module; else a provider)"`
}

// Verdict is what get_policy_verdict answers.
type Verdict struct {
	Kind    string `json:"kind"`
	Address string `json:"address"`
	Version string `json:"version"`
	// Verdict is allowed, warned, deprecated, denied or revoked.
	Verdict string `json:"verdict" jsonschema:"allowed, warned (served, with a warning of known vulnerabilities), deprecated (served, with a message), denied or revoked (not served)"`
	// Installs says whether tofu installs the version through the proxy.
	Installs bool   `json:"installs"`
	Rule     string `json:"rule,omitempty" jsonschema:"the policy rule that decided"`
	Reason   string `json:"reason,omitempty"`
	Message  string `json:"message,omitempty" jsonschema:"what clients are told: the deprecation or revocation message"`
	Warning  string `json:"warning,omitempty"`
}

func addPolicyTools(s *mcp.Server, t *tools) {
	add(s, readOnly("get_policy_verdict", "Policy verdict",
		"Whether the organisation's policy lets a module or provider version install: allowed, warned, deprecated, "+
			"denied or revoked, with the deciding rule and its reason, as tofu is told when it installs it."), t.verdict)
}

func (t *tools) verdict(ctx context.Context, in VerdictIn) (Verdict, error) {
	if in.Version == "" {
		return Verdict{}, fmt.Errorf("version: a version is required")
	}
	v, err := parseVersion(in.Version)
	if err != nil || v == nil {
		return Verdict{}, fmt.Errorf("version %q: want a version such as 1.2.3", clip(in.Version))
	}
	kind, err := kindOf(in.Address, in.Kind)
	if err != nil {
		return Verdict{}, err
	}
	var vs []catalog.VersionStatus
	var address string
	if kind == catalog.KindModule {
		d, err := t.moduleVersions(ctx, in.Address, *v)
		if err != nil {
			return Verdict{}, err
		}
		vs, address = d.Versions, d.Address
	} else {
		d, err := t.providerPage(ctx, in.Address, "", nil)
		if err != nil {
			return Verdict{}, err
		}
		vs, address = d.Versions, d.Address
	}
	for _, s := range vs {
		if s.Version == v.String() {
			return verdictOf(kind, address, s), nil
		}
	}
	return Verdict{}, fmt.Errorf("%s %s holds no version %s", kind, address, v)
}

// moduleVersions is the page of the module address names, at its newest
// version: it lists every version's status, the one judged among them
// (a page of a denied version itself would be refused). A version in
// address must be v.
func (t *tools) moduleVersions(ctx context.Context, address string, v names.Version) (catalog.ModulePage, error) {
	m, err := t.moduleID(ctx, address, "")
	if err != nil {
		return catalog.ModulePage{}, err
	}
	if m.version != nil && m.version.String() != v.String() {
		return catalog.ModulePage{}, fmt.Errorf("address %q names version %s, version %s: give one", clip(address), m.version, v)
	}
	m.version, m.dir = nil, ""
	return t.readModule(ctx, m)
}

// kindOf is what address is: kind when given, else by its parts.
func kindOf(address, kind string) (string, error) {
	switch kind {
	case catalog.KindModule, catalog.KindProvider:
		return kind, nil
	case "":
		// HOST/NS/NAME/SYSTEM, or NS/NAME/SYSTEM whose first part is no
		// host name: a module; NS/TYPE or HOST/NS/TYPE: a provider.
		first, _, _ := strings.Cut(address, "/")
		if n := strings.Count(address, "/"); n >= 3 || n == 2 && !looksLikeHost(first) {
			return catalog.KindModule, nil
		}
		return catalog.KindProvider, nil
	}
	return "", fmt.Errorf("kind %q: want module or provider", clip(kind))
}

// verdictOf is the verdict of the catalogue's status s.
func verdictOf(kind, address string, s catalog.VersionStatus) Verdict {
	v := Verdict{Kind: kind, Address: address, Version: s.Version, Verdict: s.Status, Rule: s.Rule, Reason: s.Reason, Message: s.Message, Warning: s.Warning}
	switch s.Status {
	case catalog.StatusServed:
		v.Verdict, v.Installs = "allowed", true
	case catalog.StatusWarned, catalog.StatusDeprecated:
		v.Installs = true
	}
	return v
}
