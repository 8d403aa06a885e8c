package preflight

import (
	"fmt"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// soonExpiring is how far ahead an expiry is worth a warning.
const soonExpiring = 7 * 24 * time.Hour

// Clients reports the access configuration: whether clients must
// authenticate, and for each of the policy's clients what it may read
// and how it is named; a client whose tokens expired or expire within a
// week, or whose patterns match nothing this proxy maps, is a warning.
func Clients(cfg PolicyConfig) []Result {
	row := func(status, target, detail string) Result {
		return Result{Target: target, Mapping: cfg.File, Status: status, Detail: detail}
	}
	if !cfg.Policy.HasClients() {
		if cfg.OperatorTokens > 0 {
			return []Result{row(StatusOK, "client authentication", names.Plural(cfg.OperatorTokens, "--auth-token-file token")+", each reading everything")}
		}
		return nil
	}
	now := cfg.Now
	if now.IsZero() {
		now = time.Now()
	}
	summary := names.Plural(len(cfg.Policy.ClientNames()), "client") + " in the policy file"
	if cfg.OperatorTokens > 0 {
		summary += ", and " + names.Plural(cfg.OperatorTokens, "--auth-token-file token") + " reading everything"
	}
	out := []Result{row(StatusOK, "client authentication", summary)}
	for _, name := range cfg.Policy.ClientNames() {
		out = append(out, cfg.client(cfg.Policy.Client(name), now, row))
	}
	return out
}

// client is the row of one client.
func (cfg PolicyConfig) client(c *policy.Client, now time.Time, row func(status, target, detail string) Result) Result {
	target := "client " + c.Name
	switch {
	case c.Expired(now):
		return row(StatusWarning, target, fmt.Sprintf("its tokens expired at %s: it reads nothing", c.Expires.UTC().Format(time.RFC3339)))
	case !c.Expires.IsZero() && c.Expires.Sub(now) < soonExpiring:
		return row(StatusWarning, target, fmt.Sprintf("its tokens expire at %s, in %s", c.Expires.UTC().Format(time.RFC3339), c.Expires.Sub(now).Round(time.Minute)))
	}
	if why := cfg.unreadable(c); why != "" {
		return row(StatusWarning, target, why)
	}
	return row(StatusOK, target, c.Summary())
}

// unreadable says why some of c's patterns can match nothing mapped.
func (cfg PolicyConfig) unreadable(c *policy.Client) string {
	for _, p := range c.Providers() {
		if cfg.unmatched(policy.RuleInfo{Kind: names.KindProvider, Pattern: p}) != "" {
			return fmt.Sprintf("its provider pattern %s matches no address a mapping admits: it reads nothing there", p)
		}
	}
	if len(c.Modules()) > 0 && !cfg.Modules {
		return "it has module patterns, but no module template is configured"
	}
	if c.Tofu() && !cfg.Tofu {
		return "tofu = true, but no OpenTofu repository is configured"
	}
	return ""
}

// RegistryDecides says what serve --registry-decides does: clients'
// tokens are registry credentials, the registry's yes kept for ttl; with
// pull-through, an address no repository holds yet needs another client.
func RegistryDecides(ttl time.Duration, pullThrough bool) Result {
	detail := fmt.Sprintf("clients' bearer tokens are their registry credentials (USERNAME:PASSWORD); the registry must list every mapped repository holding an address to them; its yes is kept %s per credential and repository; the proxy reads with its own credential", ttl)
	if pullThrough {
		detail += "; with pull-through, an address no mapped repository holds yet is refused to registry credentials (a repository that does not exist confirms nothing): its first use needs an --auth-token-file token or a policy file client"
	}
	return Result{Target: "registry decides", Status: StatusOK, Detail: detail}
}
