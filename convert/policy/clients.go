package policy

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/oci-tofu/oci-tofu/convert/localfile"
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
	Rate  float64
	Burst int
	// OIDC are the identities (JWTs of CI jobs and workloads) that name
	// the client besides its tokens.
	OIDC      []*OIDC
	tokens    [][sha256.Size]byte
	providers []string // normalised patterns
	modules   []string
	tofu      bool
}

var clientSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "tokens"}, {Name: "expires"}, {Name: "providers"}, {Name: "modules"}, {Name: "tofu"},
		{Name: "rate"}, {Name: "burst"}},
	Blocks: []hcl.BlockHeaderSchema{{Type: "oidc"}},
}

var oidcSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "issuer", Required: true}, {Name: "audience", Required: true}, {Name: "jwks"}, {Name: "claims"}},
}

// OIDC is one oidc block of a client: a JWT its issuer signed for the
// audience, whose claims match every pattern of Claims, names the
// client (CI jobs and workloads without a stored secret).
type OIDC struct {
	Issuer   string // https://…, as the tokens' iss claim carries it
	Audience string // the aud the tokens must carry: the proxy's
	// JWKSFile, when set, holds the issuer's keys (resolved against the
	// policy file's directory); otherwise they are found through the
	// issuer's discovery document.
	JWKSFile string
	// Claims are claim name → pattern ("repo:acme/*": * is any run of
	// characters, ? one), each matched against the claim's JSON value
	// (claimMatches); they pin the identity (checkPinned).
	Claims  map[string]string
	matches map[string]*regexp.Regexp
}

// NewToken is a new client token: 32 random bytes, base64url.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// TokenHash is what a client block's tokens list holds for token.
func TokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return TokenHashPrefix + hex.EncodeToString(sum[:])
}

// parseClient reads one client block.
func parseClient(b *hcl.Block, env *parseEnv) (*Client, error) {
	c := &Client{Name: b.Labels[0]}
	if !validClientName(c.Name) {
		return nil, posError(b.LabelRanges[0], fmt.Sprintf("invalid client name %q: 1 to 64 of a-z, 0-9, '-', '_' and '.'", c.Name))
	}
	content, diags := b.Body.Content(clientSchema)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	for _, ob := range content.Blocks {
		o, err := parseOIDC(ob, c.Name, env)
		if err != nil {
			return nil, err
		}
		c.OIDC = append(c.OIDC, o)
	}
	if a, ok := content.Attributes["tokens"]; ok {
		if err := c.parseTokens(a); err != nil {
			return nil, err
		}
	} else if len(c.OIDC) == 0 {
		return nil, posError(b.DefRange, fmt.Sprintf("client %q has neither tokens nor an oidc block: nothing could name it", c.Name))
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
	if c.providers, err = clientPatterns(content.Attributes["providers"], names.KindProvider); err != nil {
		return nil, err
	}
	if c.modules, err = clientPatterns(content.Attributes["modules"], names.KindModule); err != nil {
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

// parseOIDC reads an oidc block of client.
func parseOIDC(b *hcl.Block, client string, env *parseEnv) (*OIDC, error) {
	content, diags := b.Body.Content(oidcSchema)
	if diags.HasErrors() {
		return nil, diagError(diags)
	}
	o := &OIDC{}
	a := content.Attributes["issuer"]
	if err := decode(a, &o.Issuer); err != nil {
		return nil, err
	}
	if u, err := url.Parse(o.Issuer); err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, posError(a.Expr.Range(), fmt.Sprintf("issuer %q: want https://host[/path], exactly as the tokens' iss claim carries it", o.Issuer))
	}
	a = content.Attributes["audience"]
	if err := decode(a, &o.Audience); err != nil {
		return nil, err
	}
	if strings.TrimSpace(o.Audience) == "" {
		return nil, posError(a.Expr.Range(), "audience: the aud the tokens must carry (the proxy's URL, say) may not be empty")
	}
	if a, ok := content.Attributes["jwks"]; ok {
		var p string
		if err := decode(a, &p); err != nil {
			return nil, err
		}
		o.JWKSFile = env.path(p)
		if _, err := localfile.ReadBounded(o.JWKSFile, 1<<20); err != nil {
			return nil, posError(a.Expr.Range(), fmt.Sprintf("jwks: %v", err))
		}
	}
	claims := content.Attributes["claims"]
	if err := o.parseClaims(claims); err != nil {
		return nil, err
	}
	return o, o.checkPinned(client, b, claims)
}

// parseClaims reads the claims attribute, when there is one.
func (o *OIDC) parseClaims(a *hcl.Attribute) error {
	if a == nil {
		return nil
	}
	if err := decode(a, &o.Claims); err != nil {
		return err
	}
	o.matches = make(map[string]*regexp.Regexp, len(o.Claims))
	for k, v := range o.Claims {
		if k == "" || len(v) > 1024 {
			return posError(a.Expr.Range(), fmt.Sprintf("claims: %s = %q is not a claim name and a pattern of at most 1024 bytes", k, shorten(v)))
		}
		o.matches[k] = claimPattern(v)
	}
	return nil
}

// Matches reports whether a token's claims (verified, as JSON decodes
// them, numbers as json.Number) match every pattern of o's.
func (o *OIDC) Matches(claims map[string]any) bool {
	for name, re := range o.matches {
		v, ok := claims[name]
		if !ok || !claimMatches(re, v) {
			return false
		}
	}
	return true
}

// ClientOfIdentity is the first client (in the file's order) with an
// oidc block for issuer whose claims match, and that block; nil when
// none does.
func (p *Policy) ClientOfIdentity(issuer string, claims map[string]any) (*Client, *OIDC) {
	if p == nil {
		return nil, nil
	}
	for _, c := range p.clients {
		for _, o := range c.OIDC {
			if o.Issuer == issuer && o.Matches(claims) {
				return c, o
			}
		}
	}
	return nil, nil
}

// Issuers are the oidc blocks' issuers, each once (with its audience
// and keys file): what a proxy verifies tokens against.
func (p *Policy) Issuers() []OIDC {
	if p == nil {
		return nil
	}
	var out []OIDC
	seen := map[string]bool{}
	for _, c := range p.clients {
		for _, o := range c.OIDC {
			if !seen[o.Issuer] {
				seen[o.Issuer] = true
				out = append(out, OIDC{Issuer: o.Issuer, Audience: o.Audience, JWKSFile: o.JWKSFile})
			}
		}
	}
	return out
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
	case names.KindProvider:
		patterns = c.providers
	case names.KindModule:
		patterns = c.modules
	case names.KindTofu:
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

// ClientsNote names the clients, for a message about one that is not
// there: "its clients: a, b", or "it has no client blocks".
func (p *Policy) ClientsNote() string {
	if names := p.ClientNames(); len(names) > 0 {
		return "its clients: " + strings.Join(names, ", ")
	}
	return "it has no client blocks"
}

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

// HasBudgets reports whether some client has a request budget (a rate).
func (p *Policy) HasBudgets() bool {
	if p == nil {
		return false
	}
	for _, c := range p.clients {
		if c.Rate > 0 {
			return true
		}
	}
	return false
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
func (p *Policy) addClients(blocks []*hcl.Block, env *parseEnv) error {
	if len(blocks) > maxClients {
		return posError(blocks[maxClients].DefRange, fmt.Sprintf("the policy has %d clients, more than %d", len(blocks), maxClients))
	}
	names := map[string]hcl.Range{}
	p.tokenOwners = map[[sha256.Size]byte]*Client{}
	for _, b := range blocks {
		c, err := parseClient(b, env)
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
		if err := p.checkIssuers(c, b); err != nil {
			return err
		}
		p.clients = append(p.clients, c)
	}
	return nil
}

// checkIssuers refuses an oidc block naming an issuer another names with
// another audience or keys file: one issuer is verified one way.
func (p *Policy) checkIssuers(c *Client, b *hcl.Block) error {
	for _, o := range c.OIDC {
		for _, prev := range p.Issuers() {
			if prev.Issuer == o.Issuer && (prev.Audience != o.Audience || prev.JWKSFile != o.JWKSFile) {
				return posError(b.DefRange, fmt.Sprintf("client %q: issuer %s is named with another audience or jwks file elsewhere: an issuer's tokens are verified one way", c.Name, o.Issuer))
			}
		}
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

// TokenCount is how many token hashes the client has.
func (c *Client) TokenCount() int { return len(c.tokens) }

// Summary says what c reads and what names it, for people (serve
// --check, the page).
func (c *Client) Summary() string {
	var reads []string
	if n := len(c.providers); n > 0 {
		reads = append(reads, names.Plural(n, "provider pattern"))
	}
	if n := len(c.modules); n > 0 {
		reads = append(reads, names.Plural(n, "module pattern"))
	}
	if c.tofu {
		reads = append(reads, "OpenTofu releases")
	}
	if len(reads) == 0 {
		reads = append(reads, "nothing")
	}
	s := "reads " + strings.Join(reads, ", ")
	var by []string
	if n := len(c.tokens); n > 0 {
		by = append(by, names.Plural(n, "token"))
	}
	for _, o := range c.OIDC {
		by = append(by, "OIDC identities of "+o.Issuer)
	}
	s += "; named by " + strings.Join(by, ", ")
	if c.Rate > 0 {
		s += fmt.Sprintf("; %g requests per second, bursts of %d", c.Rate, c.Burst)
	}
	if !c.Expires.IsZero() {
		s += "; expires " + c.Expires.UTC().Format(time.RFC3339)
	}
	return s
}
