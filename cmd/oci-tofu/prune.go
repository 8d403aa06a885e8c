package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/prune"
	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/events/cliemit"
)

func pruneCommand() *cli.Command {
	return &cli.Command{
		Name:      "prune",
		Usage:     "delete the versions no keep rule keeps (a dry run unless --apply)",
		ArgsUsage: "REPOSITORY... | --provider-template TEMPLATE ADDRESS...",
		Description: `Each REPOSITORY is host[:port]/path in a registry holding providers, modules or
OpenTofu releases (what it holds is read from its versions); with --provider-template,
each ADDRESS (hashicorp/aws, registry.opentofu.org/hashicorp/aws) names a provider whose
repository the template gives. A version is kept when any rule keeps it:

  --keep-newest N     the newest N releases of each major version, and the newest N
                      pre-releases of a major newer than its newest release
  --keep-locked DIR   every version a .terraform.lock.hcl under DIR pins (recursively,
                      .terraform directories skipped; providers only), whatever host
                      its entry names: the repository it maps to as serve maps it
  --keep-downloaded-within PERIOD
                      every version a client downloaded within PERIOD, by the proxy's
                      audit trail (--audit-log: its files, or a directory of replicas'),
                      and every version too new to judge: pushed within PERIOD, or
                      at a time unknown (pushed without --attest-key)
  --policy FILE       every version a keep block keeps under any address serve may
                      show the repository under; a keep block about a pruned
                      repository that decides none of them is an error

and also when deleting it would delete another tag (latest, or a kept version naming
the same manifest). At least one rule is required. Without --apply nothing is deleted:
the versions that would go are listed with the bytes only they reference (blobs shared
with kept versions are not counted). With --apply each goes whole: its signatures,
attestations and other referrers first, then its tag and manifest, then the manifests
its index lists; the registry frees the blobs when it garbage-collects. A registry
that refuses deletes (GHCR) is named, with what was deleted before.`,
		Flags: append(append([]cli.Flag{
			&cli.StringFlag{Name: "provider-template", Usage: "where the ADDRESS arguments' providers live, as tofu's repository_template: e.g. `ghcr.io/acme/providers/${namespace}/${type}`", EnvVars: []string{"OCI_TOFU_PROVIDER_TEMPLATE"}},
			&cli.IntFlag{Name: "keep-newest", Usage: "keep the newest `N` releases (and N newer pre-releases) of each major version"},
			&cli.StringSliceFlag{Name: "keep-locked", Usage: "keep every version a .terraform.lock.hcl under `DIR` pins (repeatable)"},
			&cli.StringFlag{Name: "keep-downloaded-within", Usage: "keep every version downloaded within `PERIOD` (90d, 12w, 720h), by the audit trails of --audit-log"},
			&cli.StringSliceFlag{Name: "audit-log", Usage: "a proxy's audit trail `FILE` (serve --audit-log; its rotated files are read too) or a directory of several replicas' (repeatable)"},
			&cli.StringFlag{Name: "policy", Usage: "keep every version the policy `FILE` marks to keep (docs/policy.md)", EnvVars: []string{"OCI_TOFU_POLICY"}},
			&cli.BoolFlag{Name: "apply", Usage: "delete; without it, only list what would be deleted"},
		}, registryFlags()...), append(outputFlags(), eventsFlags()...)...),
		Action: withEvents(runPrune),
	}
}

func runPrune(c *cli.Context) error {
	if err := wantArgs(c, 1, -1); err != nil {
		return err
	}
	targets, err := pruneTargets(c)
	if err != nil {
		return err
	}
	tpl, err := providerTemplate(c) // targets.go
	if err != nil {
		return err
	}
	pol, err := readGatePolicy(c) // gate.go
	if err != nil {
		return err
	}
	rules, warnings, err := pruneRules(c, tpl, targets, pol)
	if err != nil {
		return err
	}
	client, err := registryClient(c)
	if err != nil {
		return err
	}
	plans, warning, err := prune.PlanTargets(c.Context, client, targets, rules, pol, tpl)
	if err != nil {
		return err
	}
	var applyErr error
	if c.Bool("apply") {
		applyErr = prune.ApplyPlans(c.Context, client, targets, plans)
		warnings = append(warnings, prune.IndexNotes(plans)...)
		cliemit.From(c.Context).Pruned(plans)
	}
	if err := reportPrune(newReporter(c), plans, appendNonEmpty(warnings, warning), c.Bool("apply")); err != nil {
		return err
	}
	return applyErr
}

// pruneTargets are the repositories the arguments name
// (repositoryTargets).
func pruneTargets(c *cli.Context) ([]prune.Target, error) {
	named, err := repositoryTargets(c, "prune judges every version tag") // targets.go
	targets := make([]prune.Target, len(named))
	for i, t := range named {
		targets[i] = prune.Target{Ref: t.ref, Provider: t.provider}
	}
	return targets, err
}

func appendNonEmpty(list []string, s string) []string {
	if s == "" {
		return list
	}
	return append(list, s)
}

// pruneRules reads the keep rules the flags give, and warnings about
// them (lock file entries pinning nothing pruned); without any rule,
// prune would delete every version, which is refused.
func pruneRules(c *cli.Context, tpl *repotemplate.Template, targets []prune.Target, pol *policy.Policy) (prune.Rules, []string, error) {
	rules := prune.Rules{KeepNewest: c.Int("keep-newest")}
	var warnings []string
	if rules.KeepNewest < 0 {
		return rules, nil, usageError(c, "--keep-newest %d: give a number of versions, 1 or more", rules.KeepNewest)
	}
	if dirs := c.StringSlice("keep-locked"); len(dirs) > 0 {
		locked, err := prune.ReadLockFiles(dirs)
		if err != nil {
			return rules, nil, err
		}
		pinned := func(p names.Provider) []string { return prune.LockedRepositories(tpl, targets, p) }
		rules.Pins = prune.NewLockPins(locked, pinned)
		warnings = appendNonEmpty(warnings, prune.UnpinnedWarning(locked, pinned))
	}
	if pol != nil {
		rules.Keep = pol.Keeps
	}
	if err := downloadRule(c, &rules); err != nil {
		return rules, nil, err
	}
	if rules.KeepNewest == 0 && rules.Pins == nil && rules.Keep == nil && rules.Downloads == nil {
		return rules, nil, usageError(c, "give at least one keep rule (--keep-newest, --keep-locked, --keep-downloaded-within, --policy): without one every version would be deleted")
	}
	return rules, warnings, nil
}

// downloadRule reads --keep-downloaded-within and the audit trails it is
// answered from (--audit-log, each file with the files it was rotated
// into, or a directory of several replicas' files).
func downloadRule(c *cli.Context, rules *prune.Rules) error {
	within, logs := c.String("keep-downloaded-within"), c.StringSlice("audit-log")
	switch {
	case within == "" && len(logs) == 0:
		return nil
	case within == "":
		return usageError(c, "--audit-log goes with --keep-downloaded-within")
	case len(logs) == 0:
		return usageError(c, "--keep-downloaded-within needs the proxy's audit trail: --audit-log FILE (serve --audit-log)")
	}
	period, err := prune.ParsePeriod(within)
	if err != nil {
		return usageError(c, "--keep-downloaded-within: %v", err)
	}
	rules.Now = time.Now()
	tally := audit.NewTally(audit.Filter{Since: rules.Now.Add(-period)})
	if _, err := audit.ScanPaths(c.Context, logs, tally); err != nil {
		return err
	}
	if tally.Partial() {
		return fmt.Errorf("the audit trail names more than %d versions and clients within %s: prune cannot tell which were downloaded", audit.MaxKeys, within)
	}
	rules.KeepDownloadedWithin, rules.Downloads = period, prune.LastDownloads(tally.LastDownloads())
	return nil
}

// reportPrune prints the warnings, then the table (or JSON) of every
// version and the total (prune.NewReport).
func reportPrune(rep *report.Reporter, plans []*prune.Plan, warnings []string, applied bool) error {
	for _, w := range warnings {
		rep.Warn("prune", []string{w})
	}
	res, human := prune.NewReport(plans, warnings, applied)
	return rep.Result(res, human)
}
