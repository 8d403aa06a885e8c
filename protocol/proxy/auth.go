package proxy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/audit"
	"github.com/oci-tofu/oci-tofu/protocol/oidc"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/logins"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Client authentication: the bearer tokens of --auth-token-file (which
// read everything) and the clients of the policy file (docs/policy.md,
// "Clients": each reads what its patterns name), all compared by their
// sha256 in constant time. It is on when serve starts with either; the
// policy file cannot turn it on or off while serving (policyfile refuses
// such a reload).

// Why a bearer token is not accepted (the 401's message says which).
var (
	errNoToken      = errors.New("a valid bearer token is required: add a credentials block for this host to the CLI configuration")
	errUnknownToken = errors.New("the bearer token is not one this proxy accepts: check the credentials block is for this host, and that the token is current")
)

// Authenticate requires a bearer token the proxy accepts when client
// authentication is on (OpenTofu and Terraform send the token of a
// credentials block for the proxy's hostname, or TF_TOKEN_<host>, as
// "Authorization: Bearer"; the scheme is case-insensitive), and hands h
// the request with its client (respond.WithReader) when that client
// reads only some addresses.
func (s *Server) Authenticate(h http.Handler) http.Handler {
	if !s.clientAuth {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred, err := s.credentialOf(r)
		ev := respond.EventOf(r.Context())
		if err != nil {
			w.Header().Add("WWW-Authenticate", `Bearer realm="oci-tofu"`)
			msg := err.Error()
			if errors.Is(err, errNoToken) {
				// The usual cause: a credentials block (or TF_TOKEN_…) for
				// another host name, or without the port.
				msg += fmt.Sprintf(" (credentials %q, the host and port this request was sent to)", r.Host)
			}
			ev.Refused(audit.OutcomeNoAuth, "", "", "", msg)
			respond.WriteError(w, r, http.StatusUnauthorized, msg)
			return
		}
		ev.Identify(cred.caller())
		if err := s.budgets.spend(cred.client); err != nil {
			s.out.Fail(w, r, err)
			return
		}
		if c := cred.reader(); c != nil {
			r = r.WithContext(respond.WithReader(r.Context(), c))
		}
		h.ServeHTTP(w, r)
	})
}

// bearer is credentialOf for the archive URLs: ok when r's bearer token
// names a caller, which then spends from its budget as for a document
// (err: over it). A signed URL without a token spends the budget of the
// client its ticket names (ticketBudgets).
func (s *Server) bearer(r *http.Request) (respond.Reader, audit.Caller, bool, error) {
	cred, err := s.credentialOf(r)
	if err != nil {
		return nil, audit.Caller{}, false, nil
	}
	return cred.reader(), cred.caller(), true, s.budgets.spend(cred.client)
}

// credential is what a bearer token turned out to be: an operator's (a
// token of --auth-token-file, reading everything: both nil), a policy
// file client's, or with --registry-decides a registry credential.
type credential struct {
	client   *policy.Client
	registry *registryID
	// subject is the verified JWT's subject a client was found by;
	// operator the sha256 of an operator's token.
	subject  string
	operator [sha256.Size]byte
}

// caller is who the credential names, as the audit trail names callers:
// a client by its name (and, found by a JWT, its subject), a registry
// user by theirs, an operator by a fingerprint of the token (12 hex
// digits of its sha256: enough to tell the tokens of --auth-token-file
// apart, nothing of the token).
func (c credential) caller() audit.Caller {
	switch {
	case c.client != nil && c.subject != "":
		return audit.Caller{Client: c.client.Name, Identity: audit.IdentityOIDC, Subject: c.subject}
	case c.client != nil:
		return audit.Caller{Client: c.client.Name, Identity: audit.IdentityClient}
	case c.registry != nil:
		return c.registry.Caller()
	}
	return audit.Caller{Client: "operator", Identity: audit.IdentityOperator, Token: "sha256:" + hex.EncodeToString(c.operator[:6])}
}

// reader is the caller as the responder asks it about addresses; nil
// for an operator.
func (c credential) reader() respond.Reader {
	switch {
	case c.client != nil:
		return scoped{c.client}
	case c.registry != nil:
		return c.registry
	}
	return nil
}

// scoped is a policy file client as the responder asks it.
type scoped struct{ *policy.Client }

func (c scoped) Reads(_ context.Context, kind names.Kind, address string) error {
	if _, ok := c.Client.Reads(kind, address); ok {
		return nil
	}
	what := string(kind) + " " + address
	if kind == names.KindTofu {
		what = "OpenTofu releases"
	}
	return source.NotFoundf("%s: not within the scope of client %s", what, c.Name)
}

// credentialOf is what r's bearer token is: an operator for a token of
// --auth-token-file, the policy's client whose token hashes hold the
// token's, for a JWT the client its verified identity names
// (identities.go), or with --registry-decides the registry credential it
// carries (registry_decides.go); an error when it names none, or a
// client whose tokens expired.
func (s *Server) credentialOf(r *http.Request) (credential, error) {
	ctx := r.Context()
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	tok = strings.TrimSpace(tok)
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return credential{}, errNoToken
	}
	sum := sha256.Sum256([]byte(tok))
	if s.isOperatorSum(sum) {
		return credential{operator: sum}, nil
	}
	pol := s.opts.Policy.Current()
	c := pol.ClientOf(sum)
	var subject string
	if c == nil && oidc.LooksLikeJWT(tok) {
		var err error
		if c, subject, err = s.clientOfJWT(ctx, pol, tok); err != nil {
			return credential{}, err
		}
	}
	switch {
	case c == nil && s.opts.RegistryDecides:
		user, password, ok := registryCredential(tok)
		if !ok {
			return credential{}, errRegistryToken
		}
		return credential{registry: &registryID{s: s, password: password, Login: logins.Login{User: user, Key: sum, From: logins.RemoteAddress(r.RemoteAddr)}}}, nil
	case c == nil:
		return credential{}, errUnknownToken
	case c.Expired(s.opts.Now()):
		s.budgets.expired(c)
		return credential{}, fmt.Errorf("the tokens of client %s expired at %s: ask for a new one (the policy file's expires)", c.Name, c.Expires.UTC().Format(time.RFC3339))
	}
	return credential{client: c, subject: subject}, nil
}

// isOperatorSum reports whether sum is the sha256 of one of
// --auth-token-file's tokens, comparing each in constant time.
func (s *Server) isOperatorSum(sum [sha256.Size]byte) bool {
	match := 0
	for _, t := range s.tokens {
		match |= subtle.ConstantTimeCompare(sum[:], t[:])
	}
	return match == 1
}

// setUpClientAuth hashes the client tokens and keys the archive URL
// signer (nil without client authentication).
func (s *Server) setUpClientAuth() (*respond.URLSigner, error) {
	s.clientAuth = len(s.opts.AuthTokens) > 0 || s.opts.Policy.Current().HasClients() || s.opts.RegistryDecides
	if !s.clientAuth {
		return nil, nil
	}
	for _, t := range s.opts.AuthTokens {
		if t == "" {
			return nil, errors.New("empty client token")
		}
		s.tokens = append(s.tokens, sha256.Sum256([]byte(t)))
	}
	key := s.opts.URLSigningKey
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
	}
	return respond.NewURLSigner(key, s.opts.ArchiveURLTTL), nil
}

// Request budgets: a policy file client with a rate (docs/policy.md,
// "Clients") gets a token bucket of its own, so one runaway CI loop
// cannot starve the other clients or the registry; past it, 429 with
// Retry-After. Buckets live as long as their client's name and budget:
// a reload that keeps both keeps the bucket.

// budgets are the clients' token buckets and what they counted.
type budgets struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	counts  *prometheus.CounterVec // by client name (the file's, a closed set) and outcome
}

// bucket is one client's limiter, for the budget it was made for.
type bucket struct {
	rate  float64
	burst int
	lim   *rate.Limiter
}

func newBudgets(reg prometheus.Registerer) *budgets {
	b := &budgets{buckets: map[string]*bucket{}, counts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "oci_tofu_client_requests_total",
		Help: "Requests of the policy file's clients by client name and outcome (accepted, limited: over the client's rate; expired: its tokens expired).",
	}, []string{"client", "outcome"})}
	reg.MustRegister(b.counts)
	return b
}

// spend counts a request of client c (nil: none, an operator or a
// registry user, who have no budget) and is nil when its budget allows
// it, the 429 to answer (respond.Limited, with Retry-After) when not.
func (b *budgets) spend(c *policy.Client) error {
	if c == nil {
		return nil
	}
	if c.Rate <= 0 || b.limiter(c).Allow() {
		b.counts.WithLabelValues(c.Name, "accepted").Inc()
		return nil
	}
	b.counts.WithLabelValues(c.Name, "limited").Inc()
	wait := int(math.Ceil(1 / c.Rate))
	return respond.Limited(wait, "client %s is over its request budget (%g requests per second, bursts of %d): retry after %d s", c.Name, c.Rate, c.Burst, wait)
}

// limiter is c's bucket, made anew when its budget changed.
func (b *budgets) limiter(c *policy.Client) *rate.Limiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	k, ok := b.buckets[c.Name]
	if !ok || k.rate != c.Rate || k.burst != c.Burst {
		k = &bucket{rate: c.Rate, burst: c.Burst, lim: rate.NewLimiter(rate.Limit(c.Rate), c.Burst)}
		b.buckets[c.Name] = k
	}
	return k.lim
}

// expired counts a request of a client whose tokens expired.
func (b *budgets) expired(c *policy.Client) { b.counts.WithLabelValues(c.Name, "expired").Inc() }

// ticketBudgets are the budgets as the tickets of signed URLs spend
// them (respond.TicketBudgets): a tokenless download whose ticket names
// a policy file client spends from its budget as its token would.
type ticketBudgets struct{ s *Server }

func (t ticketBudgets) Spend(name string) error {
	return t.s.budgets.spend(t.s.opts.Policy.Current().Client(name))
}

func (t ticketBudgets) Budgets() bool { return t.s.opts.Policy.Current().HasBudgets() }
