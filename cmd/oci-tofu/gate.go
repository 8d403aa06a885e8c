package main

import (
	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source/gate"
)

// The policy file beyond serve (docs/policy.md): push and mirror
// refuse what it denies (--policy-warn only warns), lock locks only what
// it allows, verify reports its decision per version.

// gatePolicyFlags are --policy and --policy-warn of push and mirror.
func gatePolicyFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "policy", Usage: "refuse (push) or leave out (mirror) a version the policy `FILE` denies, naming the rule (docs/policy.md)", EnvVars: []string{"OCI_TOFU_POLICY"}},
		&cli.BoolFlag{Name: "policy-warn", Usage: "with --policy: print a warning naming the rule instead of refusing (to roll a policy out)", EnvVars: []string{"OCI_TOFU_POLICY_WARN"}},
	}
}

// policyAddressFlag names the address push matches against the policy.
func policyAddressFlag(example string) cli.Flag {
	return &cli.StringFlag{Name: "policy-address", Usage: "the `ADDRESS` the --policy rules match (" + example + "; default: registry.opentofu.org/ and the repository path's last segments)"}
}

// readGatePolicy is --policy, or nil; --policy-warn without it is a usage
// error.
func readGatePolicy(c *cli.Context) (*policy.Policy, error) {
	file := c.String("policy")
	if file == "" {
		if c.Bool("policy-warn") {
			return nil, usageError(c, "--policy-warn needs --policy FILE")
		}
		return nil, nil
	}
	p, err := policy.Load(file)
	if err != nil {
		return nil, cli.Exit("--policy: "+err.Error(), 1)
	}
	return p, nil
}

// policyAddress is --policy-address, or the address read from the
// repository's path.
func policyAddress(c *cli.Context, kind names.Kind, ref oci.Reference) (string, error) {
	if a := c.String("policy-address"); a != "" {
		q, err := gate.ParseQuery(kindPrefix(kind) + a)
		if err != nil {
			return "", usageError(c, "--policy-address: %v", err)
		}
		return q.Address, nil
	}
	return policy.AddressFromRepository(kind, ref.Repository)
}

// kindPrefix is what makes gate.ParseQuery read an address as kind.
func kindPrefix(kind names.Kind) string {
	if kind == names.KindModule {
		return "module:"
	}
	return "provider:"
}

// policyAllowsPush is nil when the policy file (if any) allows version of
// the address the pushed repository stands for; the refusal
// (policy.ErrDenied; hints.go names the flags) otherwise, or nothing but a
// warning with --policy-warn. It is asked before anything is uploaded.
func policyAllowsPush(c *cli.Context, rep *report.Reporter, kind names.Kind, ref oci.Reference, version string) error {
	p, err := readGatePolicy(c)
	if err != nil || p == nil {
		return err
	}
	addr := policy.TofuAddress
	if kind != names.KindTofu {
		if addr, err = policyAddress(c, kind, ref); err != nil {
			return err
		}
	}
	err = p.Check(kind, addr, version)
	if err == nil || !c.Bool("policy-warn") {
		return err
	}
	rep.Warn(addr+" "+version, []string{"pushed although " + err.Error() + " (--policy-warn)"})
	return nil
}
