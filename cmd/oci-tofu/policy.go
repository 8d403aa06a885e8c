package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
)

func policyCommand() *cli.Command {
	return &cli.Command{
		Name:  "policy",
		Usage: "check a policy file, and make its clients' tokens",
		Subcommands: []*cli.Command{{
			Name:      "test",
			Usage:     "what the policy decides, and which rule (offline or against the registry)",
			ArgsUsage: "ADDRESS[@VERSION]...",
			Description: "ADDRESS is a provider (hashicorp/aws, registry.opentofu.org/hashicorp/aws),\n" +
				"a module with its host (host/namespace/name/system, or module:namespace/name/system),\n" +
				"or \"tofu\". The exit status is 0 whatever is decided: it is a query.\n" +
				"Offline, a version the versions allow under a rule with min_age or signers is\n" +
				"\"depends\": that decision needs what the registry holds of the release.\n" +
				"Given serve's mapping flags (--provider-template, --config, --module-template,\n" +
				"--tofu-repository, the registry's credentials, and --require-attestation's keys,\n" +
				"which serve trusts for ingest times), it decides against the registry as serve\n" +
				"does, reading the same signatures and attestations: allow or deny, never depends;\n" +
				"an ADDRESS without @VERSION is decided for every version its repository holds.\n" +
				"With serve's --require-attestation or --require-notation, their admission rule is\n" +
				"asked too: a version the policy allows and the rule refuses is \"refuse\" (serve\n" +
				"does not list it), with the rule's reason.",
			Flags: append([]cli.Flag{
				&cli.StringFlag{Name: "policy", Usage: "the policy `FILE`", Required: true},
				&cli.BoolFlag{Name: "json", Usage: "print JSON"},
				&cli.StringFlag{Name: "as", Usage: "also say whether the policy's client `NAME` may read each ADDRESS (a client block; docs/policy.md \"Clients\")"},
			}, policyRegistryFlags()...),
			Action: policyTest,
		}, policyTokenCommand()},
	}
}

// policyQuery is one decision of policy test.
type policyQuery struct {
	Kind    names.Kind `json:"kind"`
	Address string     `json:"address"`
	Version string     `json:"version,omitempty"`
	// Held, against the registry, says whether it holds the version.
	Held *bool `json:"held,omitempty"`
	policy.Decision
	// Admission, against the registry with serve's admission flags, is
	// their word on a held version the policy allows.
	Admission *proxy.AdmissionVerdict `json:"admission,omitempty"`
	// Access, with --as, is whether that client may read the address.
	Access *clientAccess `json:"access,omitempty"`
}

// MarshalJSON writes q with the verdict first: "verdict" is the word the
// text line starts with, "allow" is true exactly when it is allow (what
// serve serves to that caller), and "policy_allows" is the policy's own
// decision (before --as's access and the admission flags' word).
func (q policyQuery) MarshalJSON() ([]byte, error) {
	type fields policyQuery // without this method
	verdict := q.verdict()
	return json.Marshal(struct {
		Verdict      string `json:"verdict"`
		Allow        bool   `json:"allow"`
		PolicyAllows bool   `json:"policy_allows"`
		fields
	}{verdict, verdict == "allow", q.Allow, fields(q)})
}

// clientAccess is whether a client may read an address, and why.
type clientAccess struct {
	Client string `json:"client"`
	Reads  bool   `json:"reads"`
	Reason string `json:"reason"`
}

// verdict is the word policy test prints first: allow, deny, depends
// (offline: on facts of the registry), or refuse (the policy allows it,
// serve's admission flags refuse the release).
func (q policyQuery) verdict() string {
	switch {
	case q.Access != nil && !q.Access.Reads:
		return "deny"
	case q.Allow && q.Admission != nil && !q.Admission.Admitted:
		return "refuse"
	case q.Allow:
		return "allow"
	case len(q.DependsOn) > 0:
		return "depends"
	}
	return "deny"
}

// explanation is the rule and reason policy test prints, with the
// deprecation's message and the admission's word when there are.
func (q policyQuery) explanation() string {
	s := fmt.Sprintf("rule %q: %s", q.Rule, q.Reason)
	if q.VulnWarning != "" { // allowed, and clients warned of it
		s += "; " + q.VulnWarning
	}
	if q.Deprecated != "" { // allowed, and clients warned of it
		s += "; deprecated: " + q.Deprecated
	}
	if q.Access != nil {
		s = q.Access.Reason + "; " + s
	}
	switch {
	case q.Admission == nil:
	case q.Admission.Admitted:
		s += "; admitted"
	default:
		s += "; not admitted: " + q.Admission.Reason
	}
	return s
}

func policyTest(c *cli.Context) error {
	if err := wantArgs(c, 1, -1); err != nil {
		return err
	}
	p, err := policy.Load(c.String("policy"))
	if err != nil {
		return err
	}
	out, err := policyDecisions(c, p)
	if err != nil {
		return err
	}
	if name := c.String("as"); name != "" {
		client := p.Client(name)
		if client == nil {
			known := "it has no client blocks"
			if names := p.ClientNames(); len(names) > 0 {
				known = "its clients: " + strings.Join(names, ", ")
			}
			return usageError(c, "--as %s: the policy has no client named %q (%s)", name, name, known)
		}
		for i := range out {
			out[i].Access = accessOf(client, out[i])
		}
	}
	w := c.App.Writer
	if c.Bool("json") {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"decisions": out})
	}
	for _, q := range out {
		what := q.Address
		if q.Version != "" {
			what += "@" + q.Version
		}
		fmt.Fprintf(w, "%-5s  %s %s  %s\n", q.verdict(), q.Kind, what, q.explanation())
	}
	return nil
}

// policyDecisions are the decisions on the arguments: offline, or
// against the registry when a mapping is given (policy_registry.go).
func policyDecisions(c *cli.Context, p *policy.Policy) ([]policyQuery, error) {
	var srv *proxy.Server
	if againstRegistry(c) {
		var err error
		if srv, err = policyServer(c, p); err != nil {
			return nil, err
		}
	}
	var out []policyQuery
	for _, arg := range c.Args().Slice() {
		q, err := parsePolicyQuery(arg)
		if err != nil {
			return nil, usageError(c, "%v", err)
		}
		if srv == nil {
			q.Decision = p.DecideOffline(q.Kind, q.Address, q.Version)
			out = append(out, q)
			continue
		}
		qs, err := registryDecisions(c, srv, q)
		if err != nil {
			return nil, err
		}
		out = append(out, qs...)
	}
	return out, nil
}

// parsePolicyQuery reads ADDRESS[@VERSION] (policy.ParseAddress).
func parsePolicyQuery(arg string) (policyQuery, error) {
	addr, version, _ := strings.Cut(arg, "@")
	if version != "" {
		if _, err := names.ParseVersion(version); err != nil {
			return policyQuery{}, fmt.Errorf("%s: %v", arg, err)
		}
	}
	kind, addr, err := policy.ParseAddress(addr)
	if err != nil {
		return policyQuery{}, fmt.Errorf("%s: %v", arg, err)
	}
	return policyQuery{Kind: kind, Address: addr, Version: version}, nil
}

// accessOf is whether client may read q's address (policy.Client.Access).
func accessOf(client *policy.Client, q policyQuery) *clientAccess {
	reads, reason := client.Access(q.Kind, q.Address, time.Now())
	return &clientAccess{Client: client.Name, Reads: reads, Reason: reason}
}
