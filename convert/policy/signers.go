package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Kinds of signer a rule can require (signers = ["KIND:VALUE", …]).
const (
	// SignerPublisher: the provider release's SHA256SUMS was signed by the
	// OpenPGP key with this ID or fingerprint, as verified when it was
	// pushed (the key IDs its provenance records). Providers only.
	SignerPublisher = "publisher"
	// SignerAttestation: the release's root carries an oci-tofu
	// attestation (.att, its kind's predicate type) by this public key.
	SignerAttestation = "attestation"
	// SignerCosign: the release's root carries a cosign signature by this
	// public key: a Sigstore bundle referrer (cosign v3's default) or a
	// .sig tag (its tag schema).
	SignerCosign = "cosign"
	// SignerNotation and SignerKeyless: verified.go.
)

// MaxMinAge bounds min_age: ten years is no cool-down but a ban.
const MaxMinAge = 10 * 365 * 24 * time.Hour

// Signer is one entry of a rule's signers.
type Signer struct {
	// Kind is SignerPublisher, SignerAttestation, SignerCosign,
	// SignerNotation or SignerKeyless.
	Kind string
	// Spec is the entry as written ("publisher:34365D9472D7468F"): the
	// signer's name in explanations and in Facts.Signed.
	Spec string
	// KeyID is a publisher key's ID: 16 upper-case hex digits (the low 64
	// bits of a fingerprint).
	KeyID string
	// Key is an attestation or cosign public key, read at load time.
	Key *attest.Verifier
	// Check checks any signer but a publisher in the registry, made at
	// load time: the key's attestation (attest.KeyAttestation) or
	// signature (attest.KeySignature), or a notation or keyless signer's
	// check (verified.go).
	Check attest.Checker
}

func (s *Signer) String() string { return s.Spec }

var hexKey = regexp.MustCompile(`^(?:0[xX])?([0-9a-fA-F]{16}|[0-9a-fA-F]{40})$`)

// signerKinds names the kinds in errors.
const signerKinds = "publisher:KEYID, attestation:KEYFILE, cosign:KEYFILE, notation:DIR or keyless:ISSUER=IDENTITY"

// parseSigner reads one signers entry of a kind's rule; key paths are
// relative to the policy file's directory.
func parseSigner(kind names.Kind, spec string, env *parseEnv) (*Signer, error) {
	k, val, ok := strings.Cut(spec, ":")
	val = strings.TrimSpace(val)
	if !ok || val == "" {
		return nil, fmt.Errorf("signers: %q is not KIND:VALUE (%s)", spec, signerKinds)
	}
	s := &Signer{Kind: k, Spec: spec}
	switch k {
	case SignerPublisher:
		if kind != names.KindProvider {
			return nil, fmt.Errorf("signers: %q: publisher keys sign provider releases only; a %s rule can require attestation:, cosign:, notation: or keyless: signers", spec, kind)
		}
		m := hexKey.FindStringSubmatch(strings.ReplaceAll(val, " ", ""))
		if m == nil {
			return nil, fmt.Errorf("signers: %q: a publisher key is an OpenPGP key ID (16 hex digits) or v4 fingerprint (40 hex digits)", spec)
		}
		id := strings.ToUpper(m[1])
		s.KeyID = id[len(id)-16:]
	case SignerAttestation, SignerCosign:
		v, err := attest.LoadVerifier(env.path(val))
		if err != nil {
			return nil, fmt.Errorf("signers: %q: reading the public key: %v", spec, err)
		}
		s.Key = v
		if k == SignerAttestation {
			s.Check = attest.KeyAttestation(spec, v)
		} else {
			s.Check = attest.KeySignature(spec, v)
		}
	case SignerNotation, SignerKeyless:
		c, err := env.registryCheck(k, spec, val)
		if err != nil {
			return nil, err
		}
		s.Check = c
	default:
		return nil, fmt.Errorf("signers: %q: unknown kind %q (%s)", spec, k, signerKinds)
	}
	return s, nil
}

// parseSigners reads a rule's signers attribute.
func parseSigners(r *rule, a *hcl.Attribute, env *parseEnv) error {
	var list []string
	if err := decodeList(a, &list); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, spec := range list {
		s, err := parseSigner(r.kind, spec, env)
		if err != nil {
			return posError(a.Expr.Range(), err.Error())
		}
		if !seen[spec] {
			seen[spec] = true
			r.signers = append(r.signers, s)
		}
	}
	return nil
}

var daysPart = regexp.MustCompile(`^([0-9]{1,5})d(.*)$`)

// ParseMinAge reads a min_age: a Go duration ("72h", "90m", "1h30m") or
// whole days, optionally followed by one ("7d", "1d12h"). It must be
// positive and at most MaxMinAge.
func ParseMinAge(s string) (time.Duration, error) {
	var d time.Duration
	rest := strings.TrimSpace(s)
	if m := daysPart.FindStringSubmatch(rest); m != nil {
		n, _ := strconv.Atoi(m[1])
		d, rest = time.Duration(n)*24*time.Hour, m[2]
	}
	if rest != "" {
		more, err := time.ParseDuration(rest)
		if err != nil {
			return 0, fmt.Errorf("min_age %q is not a duration (like \"72h\", \"90m\" or \"7d\")", s)
		}
		d += more
	}
	if d <= 0 || d > MaxMinAge {
		return 0, fmt.Errorf("min_age %q must be positive and at most 3650d", s)
	}
	return d, nil
}

// parseMinAge reads a rule's min_age attribute.
func parseMinAge(r *rule, a *hcl.Attribute) error {
	if err := decode(a, &r.minAgeText); err != nil {
		return err
	}
	d, err := ParseMinAge(r.minAgeText)
	if err != nil {
		return posError(a.Expr.Range(), err.Error())
	}
	r.minAge = d
	return nil
}

// parseFactRules reads the attributes whose decisions need facts about
// a release: min_age and signers.
func parseFactRules(r *rule, content *hcl.BodyContent, env *parseEnv) error {
	if a, ok := content.Attributes["min_age"]; ok {
		if err := parseMinAge(r, a); err != nil {
			return err
		}
	}
	if a, ok := content.Attributes["signers"]; ok {
		return parseSigners(r, a, env)
	}
	return nil
}

// factRules sum up the rules with min_age or signers, at parse time.
type factRules struct {
	any             bool
	attestationKeys []*attest.Verifier
	// keyless are the keyless signers' checks, one per entry.
	keyless     []attest.BundleVerifier
	keylessSeen map[string]bool
}

func (f *factRules) add(r *rule) {
	f.any = f.any || r.minAge > 0 || len(r.signers) > 0 || r.vulns != nil
	for _, s := range r.signers {
		switch {
		case s.Kind == SignerAttestation && !slices.ContainsFunc(f.attestationKeys, s.Key.Equal):
			f.attestationKeys = append(f.attestationKeys, s.Key)
		case s.Kind == SignerKeyless && !f.keylessSeen[s.Spec]:
			if b, ok := s.Check.(attest.BundleVerifier); ok { // a keyless signer (verified.go: KeylessLoader)
				if f.keylessSeen == nil {
					f.keylessSeen = map[string]bool{}
				}
				f.keylessSeen[s.Spec] = true
				f.keyless = append(f.keyless, b)
			}
		}
	}
}

// IngestTrust is who the file trusts to say when a release entered the
// registry (the ingest time min_age counts from): the keys of its
// attestation: signers and the identities of its keyless: signers, each
// once. Callers add the keys and identities they trust besides.
func (p *Policy) IngestTrust() attest.IngestTrust {
	if p == nil {
		return attest.IngestTrust{}
	}
	return attest.IngestTrust{Keys: p.facts.attestationKeys, Bundles: p.facts.keyless}
}

// AttestationKeys are the keys of every attestation: signer of the file,
// each once: an attestation by one of them is trusted for the ingest time
// min_age counts from.
func (p *Policy) AttestationKeys() []*attest.Verifier {
	if p == nil {
		return nil
	}
	return p.facts.attestationKeys
}

// Serial is unique to this policy among those the process loaded: a key
// for what callers cache of decisions under its signers.
func (p *Policy) Serial() uint64 {
	if p == nil {
		return 0
	}
	return p.serial
}
