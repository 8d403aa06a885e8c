package proxy

import (
	"context"
	"fmt"
	"sync"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/protocol/oidc"
)

// Workload identities: a client's oidc blocks (docs/policy.md, "Clients")
// let CI jobs and pods authenticate with the JWT they already have. The
// tokens are verified by protocol/oidc against the issuers the policy in
// force names (each verified token cached until it expires, so a token
// costs one signature check); the verifier is made anew when the policy
// is replaced.

// identities verifies JWTs for the policy in force.
type identities struct {
	mu       sync.Mutex
	made     bool   // for the policy numbered serial
	serial   uint64 // the policy the verifier was made for
	verifier *oidc.Verifier
	err      error // why the policy's issuers could not be set up
	opts     oidc.Options
}

// verifierFor is the verifier of p's issuers (nil when it names none).
func (ids *identities) verifierFor(p *policy.Policy) (*oidc.Verifier, error) {
	ids.mu.Lock()
	defer ids.mu.Unlock()
	if ids.made && p.Serial() == ids.serial {
		return ids.verifier, ids.err
	}
	ids.made, ids.serial, ids.verifier, ids.err = true, p.Serial(), nil, nil
	var issuers []oidc.Issuer
	for _, o := range p.Issuers() {
		issuers = append(issuers, oidc.Issuer{URL: o.Issuer, Audience: o.Audience, JWKSFile: o.JWKSFile})
	}
	if len(issuers) > 0 {
		ids.verifier, ids.err = oidc.New(issuers, ids.opts)
	}
	return ids.verifier, ids.err
}

// clientOfJWT is the client a verified JWT names under policy p, or why
// none: the token does not verify (expired, another audience, …), or its
// identity matches no client's oidc block.
func (s *Server) clientOfJWT(ctx context.Context, p *policy.Policy, token string) (_ *policy.Client, subject string, _ error) {
	v, err := s.identities.verifierFor(p)
	switch {
	case err != nil:
		return nil, "", fmt.Errorf("the policy's oidc issuers cannot be used: %w", err)
	case v == nil:
		return nil, "", errUnknownToken
	}
	id, err := v.Verify(ctx, token)
	if err != nil {
		return nil, "", fmt.Errorf("the bearer token is a JWT this proxy does not accept: %w", err)
	}
	c, _ := p.ClientOfIdentity(id.Issuer, id.Claims)
	if c == nil {
		return nil, "", fmt.Errorf("the JWT of %s for %q verifies, but no client's oidc block for that issuer matches its claims (policy test --as explains a client's)", id.Issuer, id.Subject)
	}
	return c, id.Subject, nil
}
