package policy

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Clients: who may read what from a proxy serving with the policy
// (docs/policy.md, "Clients"). A client block names a client, the
// sha256 of each of its bearer tokens (never a token itself), an
// optional expiry, and the address patterns it may read, in the syntax of
// the provider and module blocks' labels; tofu = true lets it read
// OpenTofu releases. A client reads nothing its patterns do not name.

// maxClients bounds the client blocks of one file.
const maxClients = 1000

// TokenHashPrefix starts a token hash as the policy file writes it.
const TokenHashPrefix = "sha256:"

// Client is one client block.
type Client struct {
	Name string
	// Expires, when not zero, is when its tokens stop being accepted.
	Expires time.Time
	// Rate, when positive, is the client's request budget: requests per
	// second, with bursts of Burst.
	Rate      float64
	Burst     int
	tokens    [][sha256.Size]byte
	providers []string // normalised patterns
	modules   []string
	tofu      bool
}

var clientSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "tokens", Required: true}, {Name: "expires"}, {Name: "providers"}, {Name: "modules"}, {Name: "tofu"},
		{Name: "rate"}, {Name: "burst"}},
}

// TokenHash is what a client block's tokens list holds for token.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return TokenHashPrefix + hex.EncodeToString(sum[:])
}

// parseClient reads one client block.
func parseClient(b *hcl.Block) (*Client, error) {
	c := &Client{Name: b.Labels[0]}
	if !validClientName(c.Name) {
		return nil, posError(b.LabelRanges[0], fmt.Sprintf("invalid client name %q: 1 to 64 of a-z, 0-9, '-', '_' and '.'", c.Name))
	}
	content, diags := b.Body.Content(clientSchema)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	if err := c.parseTokens(content.Attributes["tokens"]); err != nil {
		return nil, err
	}
	if a, ok := content.Attributes["expires"]; ok {
		var s string
		if err := decode(a, &s); err != nil {
			return nil, err
		}
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil, posError(a.Expr.Range(), fmt.Sprintf("expires: %q is not an RFC 3339 time (2027-01-31T00:00:00Z)", s))
		}
		c.Expires = t
	}
	var err error
	if c.providers, err = clientPatterns(content.Attributes["providers"], KindProvider); err != nil {
		return nil, err
	}
	if c.modules, err = clientPatterns(content.Attributes["modules"], KindModule); err != nil {
		return nil, err
	}
	if a, ok := content.Attributes["tofu"]; ok {
		if err := decode(a, &c.tofu); err != nil {
			return nil, err
		}
	}
	return c, c.parseBudget(content.Attributes["rate"], content.Attributes["burst"])
}

// maxRate bounds a client's rate (requests per second) and burst.
const maxRate = 100000

// parseBudget reads rate (requests per second) and burst (default twice
// the rate, at least 1); a burst needs a rate.
func (c *Client) parseBudget(rate, burst *hcl.Attribute) error {
	if rate == nil {
		if burst != nil {
			return posError(burst.Expr.Range(), "burst needs a rate (requests per second)")
		}
		return nil
	}
	if err := decode(rate, &c.Rate); err != nil {
		return err
	}
	if !(c.Rate > 0 && c.Rate <= maxRate) {
		return posError(rate.Expr.Range(), fmt.Sprintf("rate must be more than 0 and at most %d requests per second", maxRate))
	}
	c.Burst = max(1, int(2*c.Rate))
	if burst != nil {
		if err := decode(burst, &c.Burst); err != nil {
			return err
		}
		if c.Burst < 1 || c.Burst > maxRate {
			return posError(burst.Expr.Range(), fmt.Sprintf("burst must be 1 to %d requests", maxRate))
		}
	}
	return nil
}

// parseTokens reads the tokens list: sha256:<64 lowercase hex digits>
// each, at least one.
func (c *Client) parseTokens(a *hcl.Attribute) error {
	var list []string
	if err := decodeList(a, &list); err != nil {
		return err
	}
	if len(list) == 0 {
		return posError(a.Expr.Range(), "tokens: a client needs at least one token hash (oci-tofu policy token prints one)")
	}
	for _, s := range list {
		hexSum, ok := strings.CutPrefix(s, TokenHashPrefix)
		sum, err := hex.DecodeString(hexSum)
		if !ok || err != nil || len(sum) != sha256.Size || strings.ToLower(hexSum) != hexSum {
			return posError(a.Expr.Range(), fmt.Sprintf("tokens: %q is not a token hash (sha256: and 64 lowercase hex digits; the file holds hashes, never tokens: oci-tofu policy token prints one)", shorten(s)))
		}
		c.tokens = append(c.tokens, [sha256.Size]byte(sum))
	}
	return nil
}

// shorten keeps a quoted value short in an error: it may be a secret
// written where its hash belongs.
func shorten(s string) string {
	if len(s) > 12 {
		return s[:8] + "…"
	}
	return s
}

func clientPatterns(a *hcl.Attribute, kind names.Kind) ([]string, error) {
	if a == nil {
		return nil, nil
	}
	var list []string
	if err := decodeList(a, &list); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list))
	for _, s := range list {
		p, err := parsePattern(kind, s)
		if err != nil {
			return nil, posError(a.Expr.Range(), fmt.Sprintf("%s: %v", a.Name, err))
		}
		out = append(out, p)
	}
	return out, nil
}

func validClientName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Reads reports whether c may read address (of kind; providers
// "hostname/namespace/type", modules "hostname/namespace/name/system"),
// and names the pattern that lets it (empty for tofu).
func (c *Client) Reads(kind names.Kind, address string) (pattern string, ok bool) {
	var patterns []string
	switch kind {
	case KindProvider:
		patterns = c.providers
	case KindModule:
		patterns = c.modules
	case KindTofu:
		return "", c.tofu
	}
	address = strings.ToLower(address)
	for _, p := range patterns {
		if ok, _ := path.Match(p, address); ok {
			return p, true
		}
	}
	return "", false
}

// Expired reports whether c's tokens are no longer accepted at now.
func (c *Client) Expired(now time.Time) bool {
	return !c.Expires.IsZero() && !now.Before(c.Expires)
}

// HasClients reports whether the policy names clients: then a proxy
// serving with it answers only the requests of a client it knows.
func (p *Policy) HasClients() bool { return p != nil && len(p.clients) > 0 }

// ClientNames are the clients' names, in the order of the file (the
// closed set metrics are labelled with).
func (p *Policy) ClientNames() []string {
	if p == nil {
		return nil
	}
	out := make([]string, len(p.clients))
	for i, c := range p.clients {
		out[i] = c.Name
	}
	return out
}

// Client is the client named name, or nil.
func (p *Policy) Client(name string) *Client {
	if p == nil {
		return nil
	}
	for _, c := range p.clients {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// ClientOf is the client one of whose token hashes is sum, or nil. It is
// found by the hash (a lookup's timing depends on the sha256 of what was
// sent, which tells nothing of a token) and confirmed in constant time.
func (p *Policy) ClientOf(sum [sha256.Size]byte) *Client {
	if p == nil {
		return nil
	}
	c, ok := p.tokenOwners[sum]
	if !ok {
		return nil
	}
	for _, t := range c.tokens {
		if subtle.ConstantTimeCompare(sum[:], t[:]) == 1 {
			return c
		}
	}
	return nil
}

// addClients reads the client blocks of a file, refusing duplicate
// names and a token hash given to two clients.
func (p *Policy) addClients(blocks []*hcl.Block) error {
	if len(blocks) > maxClients {
		return posError(blocks[maxClients].DefRange, fmt.Sprintf("the policy has %d clients, more than %d", len(blocks), maxClients))
	}
	names := map[string]hcl.Range{}
	p.tokenOwners = map[[sha256.Size]byte]*Client{}
	for _, b := range blocks {
		c, err := parseClient(b)
		if err != nil {
			return err
		}
		if prev, dup := names[c.Name]; dup {
			return posError(b.DefRange, fmt.Sprintf("a client named %q is already defined at line %d", c.Name, prev.Start.Line))
		}
		names[c.Name] = b.DefRange
		for _, t := range c.tokens {
			if other, dup := p.tokenOwners[t]; dup {
				return posError(b.DefRange, fmt.Sprintf("client %q lists a token hash client %q lists too: a token names one client", c.Name, other.Name))
			}
			p.tokenOwners[t] = c
		}
		p.clients = append(p.clients, c)
	}
	return nil
}

// String is the client's name.
func (c *Client) String() string { return c.Name }

// Providers and Modules are the client's patterns, normalised; Tofu
// whether it reads OpenTofu releases.
func (c *Client) Providers() []string { return slices.Clone(c.providers) }

// Modules: see Providers.
func (c *Client) Modules() []string { return slices.Clone(c.modules) }

// Tofu: see Providers.
func (c *Client) Tofu() bool { return c.tofu }
