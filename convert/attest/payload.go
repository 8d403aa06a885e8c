package attest

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/opencontainers/go-digest"
)

// simpleSigning is cosign's signature payload ("simple signing",
// github.com/sigstore/sigstore pkg/signature/payload): it names the
// signed manifest's digest, and the repository as identity.
type simpleSigning struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
	Optional map[string]any `json:"optional"`
}

// simpleSigningType is the payload type cosign writes and checks.
const simpleSigningType = "cosign container image signature"

// signaturePayload is the simple-signing payload for subject in repository.
func signaturePayload(repository string, subject digest.Digest) ([]byte, error) {
	var p simpleSigning
	p.Critical.Identity.DockerReference = repository
	p.Critical.Image.DockerManifestDigest = subject.String()
	p.Critical.Type = simpleSigningType
	return json.Marshal(p)
}

// signedDigest is the manifest digest a simple-signing payload names.
func signedDigest(payload []byte) (digest.Digest, error) {
	var p simpleSigning
	if err := json.Unmarshal(payload, &p); err != nil {
		return "", fmt.Errorf("not a simple-signing payload: %w", err)
	}
	if p.Critical.Type != simpleSigningType {
		return "", fmt.Errorf("simple-signing payload of type %q", p.Critical.Type)
	}
	return digest.Parse(p.Critical.Image.DockerManifestDigest)
}

// Statement is an in-toto Statement v1 (https://in-toto.io/Statement/v1).
type Statement struct {
	Type          string          `json:"_type"`
	Subject       []Subject       `json:"subject"`
	PredicateType string          `json:"predicateType"`
	Predicate     json.RawMessage `json:"predicate"`
}

// Subject is what a Statement is about: a name and its digests.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// StatementType is the in-toto Statement v1 type URI.
const StatementType = "https://in-toto.io/Statement/v1"

// statementTypeV01 is in-toto Statement v0.1, which `cosign attest`
// still writes into its bundles; its fields are those of v1.
const statementTypeV01 = "https://in-toto.io/Statement/v0.1"

// covers reports whether one of the statement's subjects is d.
func (s *Statement) covers(d digest.Digest) bool {
	for _, sub := range s.Subject {
		if sub.Digest[string(d.Algorithm())] == d.Encoded() {
			return true
		}
	}
	return false
}

// envelope is a DSSE envelope (https://github.com/secure-systems-lab/dsse).
type envelope struct {
	PayloadType string              `json:"payloadType"`
	Payload     string              `json:"payload"`
	Signatures  []envelopeSignature `json:"signatures"`
}

type envelopeSignature struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"`
}

// inTotoPayloadType is the DSSE payload type of in-toto statements.
const inTotoPayloadType = "application/vnd.in-toto+json"

// pae is DSSE's pre-authentication encoding: what is signed.
func pae(payloadType string, payload []byte) []byte {
	b := []byte("DSSEv1 " + strconv.Itoa(len(payloadType)) + " " + payloadType + " " + strconv.Itoa(len(payload)) + " ")
	return append(b, payload...)
}

// signedStatement is an in-toto statement and the key's DSSE signature
// of it: sealed in an envelope for cosign's tag schema (json), in a
// Sigstore bundle for its referrers (bundle).
type signedStatement struct {
	body, sig []byte
}

// signStatement signs a statement as DSSE signs an in-toto payload.
func signStatement(s *Signer, st Statement) (signedStatement, error) {
	body, err := json.Marshal(st)
	if err != nil {
		return signedStatement{}, err
	}
	sig, err := s.Sign(pae(inTotoPayloadType, body))
	if err != nil {
		return signedStatement{}, err
	}
	return signedStatement{body: body, sig: sig}, nil
}

// json is the DSSE envelope.
func (ss signedStatement) json() ([]byte, error) {
	return json.Marshal(envelope{
		PayloadType: inTotoPayloadType,
		Payload:     b64(ss.body),
		Signatures:  []envelopeSignature{{Sig: b64(ss.sig)}},
	})
}

// sealStatement signs a statement into a DSSE envelope.
func sealStatement(s *Signer, st Statement) ([]byte, error) {
	ss, err := signStatement(s, st)
	if err != nil {
		return nil, err
	}
	return ss.json()
}

// openStatement checks a DSSE envelope's signature with v and returns
// the statement inside.
func openStatement(v *Verifier, data []byte) (*Statement, error) {
	var e envelope
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("not a DSSE envelope: %w", err)
	}
	return openEnvelope(v, e)
}

// openEnvelope checks a DSSE envelope's signature with v and returns the
// in-toto statement (v1 or v0.1) inside.
func openEnvelope(v *Verifier, e envelope) (*Statement, error) {
	if e.PayloadType != inTotoPayloadType {
		return nil, fmt.Errorf("DSSE payload type %q is not %s", e.PayloadType, inTotoPayloadType)
	}
	body, err := base64.StdEncoding.DecodeString(e.Payload)
	if err != nil {
		return nil, fmt.Errorf("DSSE payload: %w", err)
	}
	if !envelopeSignedBy(v, e, body) {
		return nil, errors.New("no signature by the key")
	}
	var st Statement
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, fmt.Errorf("not an in-toto statement: %w", err)
	}
	if st.Type != StatementType && st.Type != statementTypeV01 {
		return nil, fmt.Errorf("statement type %q is not %s", st.Type, StatementType)
	}
	return &st, nil
}

// envelopeSignedBy reports whether one of the envelope's signatures is v's.
func envelopeSignedBy(v *Verifier, e envelope, body []byte) bool {
	msg := pae(e.PayloadType, body)
	for _, s := range e.Signatures {
		sig, err := base64.StdEncoding.DecodeString(s.Sig)
		if err == nil && v.Verify(msg, sig) {
			return true
		}
	}
	return false
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
