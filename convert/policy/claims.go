package policy

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// The claims of an oidc block (docs/policy.md, "CI jobs and workloads"):
// what they must pin, and how a token's claims are matched against them.

// verifiedClaims are checked by the verifier itself: a pattern on them
// names no one (every token the block accepts carries the issuer and the
// audience).
var verifiedClaims = []string{"iss", "aud", "exp", "nbf", "iat", "jti"}

// sharedIssuer is an issuer that signs tokens for anyone who signs up
// (and for whatever audience their jobs ask): a block for it must pin
// the owner of the job, not just some claim.
type sharedIssuer struct {
	// whose is what it signs for, as the error says it.
	whose string
	// owners are the claims that name the owner, each with the literal
	// prefix its value starts with; the owner follows, up to sep or the
	// end, and must be written out (no * or ?).
	owners map[string]string
	// sep ends the owner in a claim's value: "/" (OWNER/REPO), ":"
	// (organization:ORG:pipeline:…).
	sep string
	// hint is how the error says which claims pin the owner.
	hint string
}

// sharedIssuers are the multi-tenant issuers known by their iss.
var sharedIssuers = map[string]sharedIssuer{
	"https://token.actions.githubusercontent.com": {
		whose: "every GitHub repository",
		sep:   "/",
		owners: map[string]string{"repository_owner": "", "repository_owner_id": "", "repository": "", "repository_id": "",
			"sub": "repo:"},
		hint: `repository_owner_id or repository_owner (or repository, repository_id, or sub = "repo:OWNER/…")`,
	},
	"https://gitlab.com": {
		whose: "every project on gitlab.com",
		sep:   "/",
		owners: map[string]string{"namespace_path": "", "namespace_id": "", "project_path": "", "project_id": "",
			"sub": "project_path:"},
		hint: `namespace_id or namespace_path (or project_path, project_id, or sub = "project_path:GROUP/…")`,
	},
	"https://app.terraform.io": {
		whose:  "every HCP Terraform organization",
		owners: map[string]string{"terraform_organization_id": "", "terraform_organization_name": "", "sub": "organization:"},
		sep:    ":",
		hint:   `terraform_organization_id or terraform_organization_name (or sub = "organization:ORG:…")`,
	},
	"https://agent.buildkite.com": {
		whose:  "every Buildkite organization",
		owners: map[string]string{"organization_id": "", "organization_slug": "", "sub": "organization:"},
		sep:    ":",
		hint:   `organization_slug or organization_id (or sub = "organization:ORG:…")`,
	},
}

// checkPinned refuses an oidc block of client whose claims would let
// tokens of anyone its issuer signs for name the client: it needs a
// claim the verifier does not check already with a pattern that is more
// than wildcards, and for a shared issuer a claim pinning the owner. The
// error is at the claims (at the block without them).
func (o *OIDC) checkPinned(client string, b *hcl.Block, claims *hcl.Attribute) error {
	at := b.DefRange
	if claims != nil {
		at = claims.Expr.Range()
	}
	if shared, ok := sharedIssuers[issuerKey(o.Issuer)]; ok && !o.pinsOwner(shared) {
		return posError(at, fmt.Sprintf("client %q: issuer %s signs tokens for %s, for any audience a job asks: its claims must pin the owner with %s, the owner written out (no * or ?)",
			client, o.Issuer, shared.whose, shared.hint))
	}
	for name, pattern := range o.Claims {
		if !slices.Contains(verifiedClaims, name) && strings.Trim(pattern, "*?") != "" {
			return nil
		}
	}
	return posError(at, fmt.Sprintf("client %q: an oidc block needs claims that pin the identity: at least one claim besides %s with a pattern that is not only * and ? (e.g. claims = { sub = \"system:serviceaccount:ci:*\" }); without one, every token %s signs for the audience names the client",
		client, strings.Join(verifiedClaims, ", "), o.Issuer))
}

// pinsOwner reports whether one of o's claims pins the owner for
// shared: its pattern is the claim's prefix, then an owner without
// wildcards, then nothing or shared.sep.
func (o *OIDC) pinsOwner(shared sharedIssuer) bool {
	for name, prefix := range shared.owners {
		pattern, ok := o.Claims[name]
		if !ok {
			continue
		}
		rest, ok := strings.CutPrefix(pattern, prefix)
		owner, _, _ := strings.Cut(rest, shared.sep)
		if ok && owner != "" && !strings.ContainsAny(owner, "*?") {
			return true
		}
	}
	return false
}

// issuerKey is an issuer URL as sharedIssuers is keyed: the host in
// lower case, without :443, and no trailing "/" (a block written so
// never matches a token, but is still refused, not silently open later).
func issuerKey(issuer string) string {
	u, err := url.Parse(issuer)
	if err != nil {
		return issuer
	}
	host := strings.ToLower(strings.TrimSuffix(u.Host, ":443"))
	return "https://" + host + strings.TrimSuffix(u.Path, "/")
}

// claimPattern compiles a claims pattern: * any run of characters, ?
// one, anything else itself; the whole value must match.
func claimPattern(p string) *regexp.Regexp {
	q := regexp.QuoteMeta(p)
	q = strings.ReplaceAll(q, `\*`, ".*")
	q = strings.ReplaceAll(q, `\?`, ".")
	return regexp.MustCompile("^(?s:" + q + ")$")
}

// claimMatches reports whether a claim's value (as JSON decodes it)
// matches re: a string as itself, a number by its JSON text, a boolean
// as true or false, an array when one of its elements of those kinds
// does. Objects, null, and arrays within arrays never match.
func claimMatches(re *regexp.Regexp, v any) bool {
	if list, ok := v.([]any); ok {
		return slices.ContainsFunc(list, func(e any) bool {
			s, ok := scalarText(e)
			return ok && re.MatchString(s)
		})
	}
	s, ok := scalarText(v)
	return ok && re.MatchString(s)
}

// scalarText is the text a claim's scalar value is matched as; false
// for anything else.
func scalarText(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case json.Number:
		return v.String(), true
	case bool:
		return strconv.FormatBool(v), true
	case float64, float32, int, int64:
		b, err := json.Marshal(v)
		return string(b), err == nil
	}
	return "", false
}
