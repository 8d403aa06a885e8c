package main

import (
	"encoding/json"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
	"github.com/oci-tofu/oci-tofu/protocol/source/gate"
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
			return usageError(c, "--as %s: the policy has no client named %q (%s)", name, name, p.ClientsNote())
		}
		gate.WithAccess(out, client)
	}
	w := c.App.Writer
	if c.Bool("json") {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"decisions": out})
	}
	for _, q := range out {
		fmt.Fprintln(w, q.Line())
	}
	return nil
}

// policyDecisions are the decisions on the arguments: offline, or
// against the registry when a mapping is given (policy_registry.go).
func policyDecisions(c *cli.Context, p *policy.Policy) ([]gate.Query, error) {
	var srv *proxy.Server
	if againstRegistry(c) {
		var err error
		if srv, err = policyServer(c, p); err != nil {
			return nil, err
		}
	}
	var out []gate.Query
	for _, arg := range c.Args().Slice() {
		q, err := gate.ParseQuery(arg)
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
