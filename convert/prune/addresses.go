package prune

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
)

// Target is one repository to prune, and the provider address it was
// named by (nil when it was named as a repository).
type Target struct {
	Ref      oci.Reference
	Provider *names.Provider
}

// How prune finds the repositories lock file entries and policy rules are
// about: as serve maps addresses to repositories, through the same
// template, whatever host name they name (docs/cli.md#prune).

// LockedRepositories are the targets a lock file entry for provider p
// pins: one p's address maps to through tpl as serve maps it (with the
// host name as the lock file writes it, and without its port, as serve
// drops the port of the registry protocol's host), and, in both forms,
// one whose repository path ends in p's namespace/type whatever the host
// name (one repository may serve a provider under several; keeping too
// much is the safe side).
func LockedRepositories(tpl *repotemplate.Template, targets []Target, p names.Provider) []string {
	mapped := mappedRepositories(tpl, p.Namespace+"/"+p.Type, []string{p.Hostname, names.HostWithoutPort(p.Hostname)})
	var out []string
	for _, t := range targets {
		if slices.Contains(mapped, t.Ref.Name()) || endsInNames(t.Ref.Repository, p.Namespace+"/"+p.Type) {
			out = append(out, t.Ref.Name())
		}
	}
	return out
}

// mappedRepositories are the repositories (host/path) tpl maps the
// provider namespace/type on each of hosts to; none without a template.
func mappedRepositories(tpl *repotemplate.Template, nsType string, hosts []string) []string {
	if tpl == nil {
		return nil
	}
	ns, typ, _ := strings.Cut(nsType, "/")
	var out []string
	for _, h := range hosts {
		ref, err := tpl.Expand(names.Provider{Hostname: h, Namespace: ns, Type: typ}.TemplateValues())
		if err == nil {
			out = append(out, ref.Name())
		}
	}
	return out
}

// endsInNames says whether repository's path ends in the segments of
// names (namespace/type), ignoring case.
func endsInNames(repository, names string) bool {
	return strings.HasSuffix(strings.ToLower("/"+repository), strings.ToLower("/"+names))
}

// maxNamed bounds the entries or blocks one warning names.
const maxNamed = 10

// UnpinnedWarning names the lock entries that pin nothing among the
// targets (their address maps to none of them), or is "".
func UnpinnedWarning(locked []Locked, pinned func(names.Provider) []string) string {
	var stray []string
	for _, l := range locked {
		if len(pinned(l.Provider)) == 0 {
			if e := l.Provider.String() + " (" + l.File + ")"; !slices.Contains(stray, e) {
				stray = append(stray, e)
			}
		}
	}
	if len(stray) == 0 {
		return ""
	}
	return "--keep-locked: these lock file entries pin nothing among the repositories pruned (their addresses map to none of them): " + namedList(stray)
}

// namedList joins at most maxNamed of list, saying how many more there are.
func namedList(list []string) string {
	if len(list) <= maxNamed {
		return strings.Join(list, ", ")
	}
	return strings.Join(list[:maxNamed], ", ") + fmt.Sprintf(" and %d more", len(list)-maxNamed)
}

// otherHost stands for every host name no rule names: serve may show a
// repository that a template without ${hostname} gives under any host
// (its own, every origin's).
const otherHost = "any-other-host.invalid"

// ServedAddresses are the addresses serve may show the artifacts of t
// (of kind) under, which the policy's rules match: t's names
// (namespace/type, namespace/name/system) on its own host
// (policy.ProviderAddress of its ADDRESS, policy.AddressFromRepository
// of a REPOSITORY), then on every host a rule names and on any other,
// each only when tpl maps it to t's repository (without a template, how
// serve maps is unknown, so every host might).
func ServedAddresses(pol *policy.Policy, tpl *repotemplate.Template, t Target, kind names.Kind) ([]string, error) {
	if kind == names.KindTofu {
		return []string{policy.TofuAddress}, nil
	}
	own, err := policy.AddressFromRepository(kind, t.Ref.Repository)
	if t.Provider != nil && kind == names.KindProvider {
		own, err = policy.ProviderAddress(*t.Provider), nil
	}
	if err != nil {
		return nil, err
	}
	_, nameParts, _ := strings.Cut(own, "/")
	out := []string{own}
	for _, h := range append(ruleHosts(pol, kind), otherHost) {
		a := h + "/" + nameParts
		if slices.Contains(out, a) {
			continue
		}
		if tpl == nil || kind != names.KindProvider || slices.Contains(mappedRepositories(tpl, nameParts, []string{h}), t.Ref.Name()) {
			out = append(out, a)
		}
	}
	return out, nil
}

// ruleHosts are the host names the policy's rules of kind name (not "*").
func ruleHosts(pol *policy.Policy, kind names.Kind) []string {
	var out []string
	for _, r := range pol.RuleList() {
		h, _, _ := strings.Cut(r.Pattern, "/")
		if r.Kind == kind && h != "" && h != "*" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}

// CheckKeepBlocks refuses a policy keep block that is about a pruned
// repository's names (its pattern matches them on some host) yet whose
// rule decides none of the addresses serve shows it under: what the
// operator meant to keep would be deleted. Blocks about nothing pruned
// are a warning (returned, "" when none).
func CheckKeepBlocks(pol *policy.Policy, plans []*Plan) (string, error) {
	deciding := map[string]bool{}
	for _, p := range plans {
		for _, a := range p.Repository.Addresses {
			for _, at := range pol.KeepBlocksDeciding(p.Repository.Kind, a) {
				deciding[at] = true
			}
		}
	}
	var refused, elsewhere []string
	for _, b := range pol.KeepBlocks() {
		switch {
		case deciding[b.At]:
		case aboutPlanned(b, plans):
			refused = append(refused, fmt.Sprintf("%s (rule %q)", b.At, b.Rule))
		default:
			elsewhere = append(elsewhere, fmt.Sprintf("%s (%s)", b.At, keepBlockWhat(b)))
		}
	}
	if len(refused) > 0 {
		return "", fmt.Errorf("--policy: the keep block at %s matches none of the repositories pruned as serve addresses them (%s): its rule decides other addresses, so prune would delete what it names. Write its pattern as serve matches the address (docs/policy.md, \"Which address\"), or prune the repository it maps to", namedList(refused), servedList(plans))
	}
	if len(elsewhere) == 0 {
		return "", nil
	}
	return "--policy: these keep blocks are about no repository pruned: " + namedList(elsewhere), nil
}

// aboutPlanned says whether b's pattern, on any host, matches the names
// of a planned repository of its kind.
func aboutPlanned(b policy.KeepBlock, plans []*Plan) bool {
	for _, p := range plans {
		if p.Repository.Kind != b.Kind || len(p.Repository.Addresses) == 0 {
			continue
		}
		if b.Kind == names.KindTofu {
			return true
		}
		_, pat, _ := strings.Cut(b.Pattern, "/")
		_, nameParts, _ := strings.Cut(p.Repository.Addresses[0], "/")
		if ok, _ := path.Match(pat, nameParts); ok {
			return true
		}
	}
	return false
}

func keepBlockWhat(b policy.KeepBlock) string {
	if b.Pattern == "" {
		return string(b.Kind)
	}
	return string(b.Kind) + " " + b.Pattern
}

// servedList names the addresses prune judged each repository by.
func servedList(plans []*Plan) string {
	var out []string
	for _, p := range plans {
		if as := p.Repository.Addresses; len(as) > 0 {
			shown := make([]string, len(as))
			for i, a := range as {
				if rest, ok := strings.CutPrefix(a, otherHost+"/"); ok {
					a = "*/" + rest // any other host
				}
				shown[i] = a
			}
			out = append(out, p.Repository.Name+" as "+strings.Join(shown, ", "))
		}
	}
	return namedList(out)
}
