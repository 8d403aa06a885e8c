package keyless

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/oci-tofu/oci-tofu/convert/attest"
)

const (
	issuer        = "https://token.actions.githubusercontent.com"
	workflow      = "https://github.com/acme/infra/.github/workflows/release.yml@refs/heads/main"
	otherWorkflow = "https://github.com/mallory/fork/.github/workflows/release.yml@refs/heads/main"
	predicateType = "https://oci-tofu.dev/attestations/provider-release/v1"
)

var subject = digest.FromString("the provider's index")

// sigstore is an offline Sigstore (Fulcio, Rekor, a timestamp authority)
// made by sigstore-go's testing CA, with its trusted root written as
// trusted_root.json. (The testing CA's certificates carry no signed
// certificate timestamps, so its CT log is left out of the root here;
// TestSCTRequiredWhenRootListsCTLogs checks what listing it does.)
type sigstore struct {
	vs   *ca.VirtualSigstore
	root string
}

func newSigstore(t *testing.T) sigstore {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	return sigstore{vs: vs, root: writeTrustedRoot(t, vs.FulcioCertificateAuthorities(), vs, false)}
}

// writeTrustedRoot writes a trusted_root.json with cas, vs's Rekor log and
// timestamp authority, and its CT log if ctlog.
func writeTrustedRoot(t *testing.T, cas []root.CertificateAuthority, vs *ca.VirtualSigstore, ctlog bool) string {
	t.Helper()
	var ctlogs map[string]*root.TransparencyLog
	if ctlog {
		ctlogs = rawLogIDs(t, vs.CTLogs())
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, cas, ctlogs, vs.TimestampingAuthorities(), rawLogIDs(t, vs.RekorLogs()))
	if err != nil {
		t.Fatal(err)
	}
	b, err := tr.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "trusted_root.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// rawLogIDs gives each log the ID a trusted_root.json carries, the raw
// key ID (the testing CA keeps its hex text, which only works in memory).
func rawLogIDs(t *testing.T, logs map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
	t.Helper()
	out := map[string]*root.TransparencyLog{}
	for id, l := range logs {
		raw, err := hex.DecodeString(id)
		if err != nil {
			t.Fatal(err)
		}
		c := *l
		c.ID = raw
		out[id] = &c
	}
	return out
}

// statement is an in-toto statement about d.
func statement(t *testing.T, d digest.Digest, predType string) []byte {
	t.Helper()
	b, err := json.Marshal(attest.Statement{
		Type:          attest.StatementType,
		Subject:       []attest.Subject{{Name: "registry.example/providers/acme/widgets", Digest: map[string]string{"sha256": d.Encoded()}}},
		PredicateType: predType,
		Predicate:     json.RawMessage(`{"signature":"verified"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// bundleOpts shape a test bundle.
type bundleOpts struct {
	at          time.Time // Rekor's integrated time (default: now + 5 min, inside the certificate's 10 minutes)
	noTimestamp bool      // leave out the RFC 3161 timestamp
	noTlog      bool      // leave out the Rekor entry
}

// attestBundle signs body as identity (keyless: a fresh Fulcio
// certificate), logs it in Rekor (inclusion proof and signed entry
// timestamp) and timestamps it, and returns the Sigstore bundle v0.3 as
// cosign attest writes it.
func (s sigstore) attestBundle(t *testing.T, identity string, body []byte, o bundleOpts) []byte {
	t.Helper()
	if o.at.IsZero() {
		o.at = time.Now().Add(5 * time.Minute)
	}
	e, err := s.vs.AttestAtTime(identity, issuer, body, o.at, true)
	if err != nil {
		t.Fatal(err)
	}
	vc, _ := e.VerificationContent()
	sc, _ := e.SignatureContent()
	env := sc.(*bundle.Envelope).RawEnvelope()
	payload, _ := base64.StdEncoding.DecodeString(env.Payload)
	sig, _ := base64.StdEncoding.DecodeString(env.Signatures[0].Sig)
	material := &protobundle.VerificationMaterial{
		Content: &protobundle.VerificationMaterial_Certificate{Certificate: &protocommon.X509Certificate{RawBytes: vc.(*bundle.Certificate).Certificate().Raw}},
	}
	if !o.noTlog {
		entries, _ := e.TlogEntries()
		material.TlogEntries = []*protorekor.TransparencyLogEntry{s.withPromise(t, entries[0])}
	}
	if ts, _ := e.Timestamps(); !o.noTimestamp {
		material.TimestampVerificationData = &protobundle.TimestampVerificationData{Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: ts[0]}}}
	}
	b, err := protojson.Marshal(&protobundle.Bundle{
		MediaType:            "application/vnd.dev.sigstore.bundle.v0.3+json",
		VerificationMaterial: material,
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: &protodsse.Envelope{
			Payload: payload, PayloadType: env.PayloadType, Signatures: []*protodsse.Signature{{Sig: sig}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// withPromise is the entry as a bundle carries it: kind and version, and
// the signed entry timestamp (Rekor's promise of inclusion at its
// integrated time) beside the inclusion proof.
func (s sigstore) withPromise(t *testing.T, e *tlog.Entry) *protorekor.TransparencyLogEntry {
	t.Helper()
	tle := e.TransparencyLogEntry()
	set, err := s.vs.RekorSignPayload(tlog.RekorPayload{
		Body: base64.StdEncoding.EncodeToString(tle.CanonicalizedBody), IntegratedTime: tle.IntegratedTime,
		LogIndex: tle.LogIndex, LogID: hex.EncodeToString(tle.LogId.KeyId),
	})
	if err != nil {
		t.Fatal(err)
	}
	tle.KindVersion = &protorekor.KindVersion{Kind: "dsse", Version: "0.0.1"}
	tle.InclusionPromise = &protorekor.InclusionPromise{SignedEntryTimestamp: set}
	return tle
}

func mustVerifier(t *testing.T, rootFile string, ids ...Identity) *Verifier {
	t.Helper()
	v, err := LoadVerifier(rootFile, ids)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A bundle signed by the required identity, logged in Rekor and
// timestamped, verifies against the offline trusted root; the statement
// and the identity that signed come back. Either the Rekor entry or the
// timestamp alone proves when it was signed.
func TestKeylessAttestationAccepted(t *testing.T) {
	s := newSigstore(t)
	want := Identity{Issuer: issuer, Subject: workflow}
	v := mustVerifier(t, s.root, Identity{Issuer: issuer, Subject: otherWorkflow}, want)
	for name, o := range map[string]bundleOpts{"rekor and timestamp": {}, "rekor only": {noTimestamp: true}} {
		t.Run(name, func(t *testing.T) {
			b := s.attestBundle(t, workflow, statement(t, subject, predicateType), o)
			st, id, err := v.VerifyAttestation(b, subject, predicateType)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if id != want || st.PredicateType != predicateType || !strings.Contains(string(st.Predicate), "verified") {
				t.Errorf("identity %v, statement %+v", id, st)
			}
		})
	}
}

// What must not pass: another signer (identity or issuer), another
// subject or predicate type, a tampered envelope, a certificate no longer
// valid when Rekor logged it, a CA the trusted root no longer trusts then,
// another Sigstore's root, a bundle without its transparency-log proof
// while the root lists Rekor logs, and what is not a bundle.
func TestKeylessAttestationRefused(t *testing.T) {
	s := newSigstore(t)
	v := mustVerifier(t, s.root, Identity{Issuer: issuer, Subject: workflow})
	good := statement(t, subject, predicateType)
	cases := map[string]struct {
		bundle []byte
		v      *Verifier
		want   string
	}{
		"another identity":       {bundle: s.attestBundle(t, otherWorkflow, good, bundleOpts{}), want: "expected SAN value"},
		"another issuer":         {bundle: s.attestBundle(t, workflow, good, bundleOpts{}), v: mustVerifier(t, s.root, Identity{Issuer: "https://accounts.google.com", Subject: workflow}), want: "expected issuer value"},
		"another subject":        {bundle: s.attestBundle(t, workflow, statement(t, digest.FromString("other"), predicateType), bundleOpts{}), want: "artifact digest does not match"},
		"another predicate type": {bundle: s.attestBundle(t, workflow, statement(t, subject, "https://slsa.dev/provenance/v1"), bundleOpts{}), want: "predicate type https://slsa.dev/provenance/v1"},
		"tampered envelope":      {bundle: tamper(t, s.attestBundle(t, workflow, good, bundleOpts{})), want: "does not match envelope payload hash"},
		"logged after the certificate expired": {
			bundle: s.attestBundle(t, workflow, good, bundleOpts{at: time.Now().Add(30 * time.Minute), noTimestamp: true}), want: "outside certificate validity"},
		"CA not trusted when signed": {bundle: s.attestBundle(t, workflow, good, bundleOpts{}), v: mustVerifier(t, expiredCARoot(t, s.vs), Identity{Issuer: issuer, Subject: workflow}), want: "leaf certificate verification failed"},
		"another Sigstore":           {bundle: newSigstore(t).attestBundle(t, workflow, good, bundleOpts{}), want: "not enough verified log entries"},
		"no Rekor entry":             {bundle: s.attestBundle(t, workflow, good, bundleOpts{noTlog: true}), want: "not enough verified log entries"},
		"not a bundle":               {bundle: []byte(`{"payloadType":"application/vnd.in-toto+json"}`), want: "not a Sigstore bundle"},
		"too large":                  {bundle: make([]byte, 2<<20), want: "larger than"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if c.v == nil {
				c.v = v
			}
			st, _, err := c.v.VerifyAttestation(c.bundle, subject, predicateType)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %+v, %v; want a refusal saying %q", st, err, c.want)
			}
		})
	}
}

// tamper changes one byte of the envelope's payload (the statement's
// predicate), leaving the signature as it was.
func tamper(t *testing.T, b []byte) []byte {
	t.Helper()
	var pb protobundle.Bundle
	if err := protojson.Unmarshal(b, &pb); err != nil {
		t.Fatal(err)
	}
	env := pb.GetDsseEnvelope()
	env.Payload = []byte(strings.Replace(string(env.Payload), `"verified"`, `"skipped!"`, 1))
	out, err := protojson.Marshal(&pb)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// expiredCARoot is vs's trusted root with its Fulcio CA trusted only until
// an hour ago (as a rotated-out CA is listed).
func expiredCARoot(t *testing.T, vs *ca.VirtualSigstore) string {
	t.Helper()
	var cas []root.CertificateAuthority
	for _, c := range vs.FulcioCertificateAuthorities() {
		f := *c.(*root.FulcioCertificateAuthority)
		f.ValidityPeriodStart, f.ValidityPeriodEnd = time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour)
		cas = append(cas, &f)
	}
	return writeTrustedRoot(t, cas, vs, false)
}

// A root that lists CT logs requires the certificate's signed certificate
// timestamp, as cosign does for Fulcio's certificates: a certificate
// without one is refused.
func TestSCTRequiredWhenRootListsCTLogs(t *testing.T) {
	s := newSigstore(t)
	v := mustVerifier(t, writeTrustedRoot(t, s.vs.FulcioCertificateAuthorities(), s.vs, true), Identity{Issuer: issuer, Subject: workflow})
	_, _, err := v.VerifyAttestation(s.attestBundle(t, workflow, statement(t, subject, predicateType), bundleOpts{}), subject, predicateType)
	if err == nil || !strings.Contains(err.Error(), "certificate timestamp") {
		t.Errorf("a certificate without SCT under a root with CT logs: %v", err)
	}
}

func TestParseIdentity(t *testing.T) {
	id, err := ParseIdentity(issuer + "=" + workflow)
	if err != nil || id.Issuer != issuer || id.Subject != workflow {
		t.Errorf("ParseIdentity: %+v, %v", id, err)
	}
	for _, bad := range []string{"", issuer, "=" + workflow, issuer + "=", "accounts.google.com=me@example.com"} {
		if _, err := ParseIdentity(bad); err == nil {
			t.Errorf("ParseIdentity(%q) accepted", bad)
		}
	}
}

// Without an identity any certificate of the CA would pass: refused.
func TestNoIdentityRefused(t *testing.T) {
	if _, err := LoadVerifier(newSigstore(t).root, nil); err == nil {
		t.Error("a verifier without identities was made")
	}
	p := filepath.Join(t.TempDir(), "trusted_root.json")
	os.WriteFile(p, []byte(`{"mediaType":"application/json"}`), 0o644)
	if _, err := LoadVerifier(p, []Identity{{Issuer: issuer, Subject: workflow}}); err == nil || !strings.Contains(err.Error(), "not a Sigstore trusted root") {
		t.Errorf("a broken trusted root: %v", err)
	}
}
