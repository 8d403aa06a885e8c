package main

import (
	"fmt"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/protocol/policyfile"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
)

// policyFlag is serve's policy file (docs/policy.md).
func policyFlag() cli.Flag {
	return &cli.StringFlag{Name: "policy", Usage: "serve only the provider, module and OpenTofu versions (and provider platforms) the policy `FILE` allows, and with client blocks only to the clients it names, each what it may read (docs/policy.md; check it with `oci-tofu policy test`); reloaded when it changes (once it is still) and on SIGHUP: write it atomically (a temporary file renamed over it); a broken file, or one with no rules or replacing default = \"deny\" that does not write its default out, leaves the last good policy in force", EnvVars: []string{"OCI_TOFU_POLICY"}}
}

// readPolicy reads --policy (applied to what the registry holds and to
// what pull-through would fetch alike) and --vuln-db; the file is nil
// without --policy.
func readPolicy(c *cli.Context, opts *proxy.Options, logger *slog.Logger) (*policyfile.File, error) {
	if err := readVulnDB(c, opts, logger); err != nil {
		return nil, err
	}
	file := c.String("policy")
	if file == "" {
		return nil, nil
	}
	pf, err := policyfile.Open(file, logger)
	if err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	if pf.Live().Current().HasVulnerabilities() && opts.VulnDB == nil {
		return nil, fmt.Errorf("--policy: %s has a vulnerabilities block: give the vulnerability database it matches SBOMs against (--vuln-db DIR)", file)
	}
	if db := opts.VulnDB; db != nil {
		pf.OnReload = func() { db.Check() }
	} else {
		pf.Require = func(p *policy.Policy) error {
			if p.HasVulnerabilities() {
				return fmt.Errorf("%s: a vulnerabilities block needs a vulnerability database: restart serve with --vuln-db DIR", file)
			}
			return nil
		}
	}
	opts.Policy, opts.PolicyStatus = pf.Live(), pf.Status
	return pf, nil
}
