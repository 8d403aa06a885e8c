package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/vulns"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/policyfile"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
)

// policyFlag is serve's policy file (docs/policy.md).
func policyFlag() cli.Flag {
	return &cli.StringFlag{Name: "policy", Usage: "serve only the provider, module and OpenTofu versions (and provider platforms) the policy `FILE` allows, and with client blocks only to the clients it names, each what it may read (docs/policy.md; check it with `oci-tofu policy test`); reloaded when it changes (once it is still) and on SIGHUP: write it atomically (a temporary file renamed over it); a broken file, or one with no rules or replacing default = \"deny\" that does not write its default out, leaves the last good policy in force", EnvVars: []string{"OCI_TOFU_POLICY"}}
}

// vulnDBFlag is the vulnerability database a policy's vulnerabilities
// blocks match stored SBOMs against.
func vulnDBFlag() cli.Flag {
	return &cli.StringFlag{Name: "vuln-db", Usage: "match the SBOMs stored for each provider platform against the vulnerability database in `DIR` (the Go vulnerability database's layout, as `govulncheck -db file://DIR` reads it, e.g. a copy of vuln.go.dev) for the policy's vulnerabilities blocks (docs/policy.md); checked for changes every 30 s and on SIGHUP, and reloaded when its index or an entry file changes; a database is taken whole: one with an entry missing or half written is not put in force", EnvVars: []string{"OCI_TOFU_VULN_DB"}}
}

// readVulnDB opens --vuln-db, when given, into opts.
func readVulnDB(c *cli.Context, opts *proxy.Options, logger *slog.Logger) error {
	dir := c.String("vuln-db")
	if dir == "" {
		return nil
	}
	db, err := vulns.OpenLive(dir, 0, logger)
	if err != nil {
		return fmt.Errorf("--vuln-db: %w", err)
	}
	opts.VulnDB = db
	return nil
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

// reloadPolicy reloads the policy file when it changes and on SIGHUP,
// until ctx ends (protocol/policyfile); nothing without a policy file.
// Without a watch (no inotify), SIGHUP still reloads.
func reloadPolicy(ctx context.Context, pf *policyfile.File, logger *slog.Logger) {
	if pf == nil {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				pf.Reload("SIGHUP")
			}
		}
	}()
	if _, err := pf.Watch(ctx); err != nil {
		logger.Warn("the policy file is not watched: send SIGHUP to reload it", "file", pf.Path(), "error", err.Error())
	}
}

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

// parsePolicyQuery reads ADDRESS[@VERSION]: "tofu", a module with four
// segments or a "module:" prefix, a provider otherwise.
func parsePolicyQuery(arg string) (policyQuery, error) {
	addr, version, _ := strings.Cut(arg, "@")
	if version != "" {
		if _, err := names.ParseVersion(version); err != nil {
			return policyQuery{}, fmt.Errorf("%s: %v", arg, err)
		}
	}
	if addr == policy.TofuAddress {
		return policyQuery{Kind: names.KindTofu, Address: addr, Version: version}, nil
	}
	if rest, ok := strings.CutPrefix(addr, "module:"); ok || strings.Count(addr, "/") == 3 {
		parts := strings.Split(strings.ToLower(rest), "/")
		if !ok {
			parts = strings.Split(strings.ToLower(addr), "/")
		}
		if len(parts) == 3 {
			parts = append([]string{"registry.opentofu.org"}, parts...)
		}
		if len(parts) != 4 {
			return policyQuery{}, fmt.Errorf("%s: a module address is [host/]namespace/name/system", arg)
		}
		return policyQuery{Kind: names.KindModule, Address: strings.Join(parts, "/"), Version: version}, nil
	}
	p, err := names.ParseProvider(strings.TrimPrefix(addr, "provider:"))
	if err != nil {
		return policyQuery{}, fmt.Errorf("%s: %v", arg, err)
	}
	return policyQuery{Kind: names.KindProvider, Address: p.String(), Version: version}, nil
}

// accessOf is whether client may read q's address, as serve decides it
// before anything else (docs/policy.md, "Clients").
func accessOf(client *policy.Client, q policyQuery) *clientAccess {
	a := &clientAccess{Client: client.Name}
	address := q.Address
	if q.Kind == names.KindTofu {
		address = ""
	}
	pattern, ok := client.Reads(q.Kind, address)
	switch {
	case client.Expired(time.Now()):
		a.Reason = fmt.Sprintf("client %s: its tokens expired at %s", client.Name, client.Expires.UTC().Format(time.RFC3339))
	case !ok && q.Kind == names.KindTofu:
		a.Reason = fmt.Sprintf("client %s may not read OpenTofu releases (no tofu = true)", client.Name)
	case !ok:
		a.Reason = fmt.Sprintf("client %s may not read %s: no pattern of its %ss list matches", client.Name, q.Address, q.Kind)
	case q.Kind == names.KindTofu:
		a.Reads, a.Reason = true, fmt.Sprintf("client %s may read OpenTofu releases", client.Name)
	default:
		a.Reads, a.Reason = true, fmt.Sprintf("client %s may read it (pattern %s)", client.Name, pattern)
	}
	return a
}
