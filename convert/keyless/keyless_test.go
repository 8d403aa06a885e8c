package keyless

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore-go/pkg/root"

	"github.com/oci-tofu/oci-tofu/convert/attest"
	"github.com/oci-tofu/oci-tofu/internal/sigstoretest"
)

const (
	issuer        = "https://token.actions.githubusercontent.com"
	workflow      = "https://github.com/acme/infra/.github/workflows/release.yml@refs/heads/main"
	otherWorkflow = "https://github.com/mallory/fork/.github/workflows/release.yml@refs/heads/main"
	predicateType = "https://oci-tofu.dev/attestations/provider-release/v1"
)

var subject = digest.FromString("the provider's index")

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
	s := sigstoretest.New(t)
	want := Identity{Issuer: issuer, Subject: workflow}
	v := mustVerifier(t, s.Root, Identity{Issuer: issuer, Subject: otherWorkflow}, want)
	for name, o := range map[string]sigstoretest.Opts{"rekor and timestamp": {}, "rekor only": {NoTimestamp: true}} {
		t.Run(name, func(t *testing.T) {
			b := s.Attest(t, issuer, workflow, statement(t, subject, predicateType), o)
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
	s := sigstoretest.New(t)
	v := mustVerifier(t, s.Root, Identity{Issuer: issuer, Subject: workflow})
	good := statement(t, subject, predicateType)
	cases := map[string]struct {
		bundle []byte
		v      *Verifier
		want   string
	}{
		"another identity":       {bundle: s.Attest(t, issuer, otherWorkflow, good, sigstoretest.Opts{}), want: "expected SAN value"},
		"another issuer":         {bundle: s.Attest(t, issuer, workflow, good, sigstoretest.Opts{}), v: mustVerifier(t, s.Root, Identity{Issuer: "https://accounts.google.com", Subject: workflow}), want: "expected issuer value"},
		"another subject":        {bundle: s.Attest(t, issuer, workflow, statement(t, digest.FromString("other"), predicateType), sigstoretest.Opts{}), want: "artifact digest does not match"},
		"another predicate type": {bundle: s.Attest(t, issuer, workflow, statement(t, subject, "https://slsa.dev/provenance/v1"), sigstoretest.Opts{}), want: "predicate type https://slsa.dev/provenance/v1"},
		"tampered envelope":      {bundle: sigstoretest.Tamper(t, s.Attest(t, issuer, workflow, good, sigstoretest.Opts{}), `"verified"`, `"skipped!"`), want: "does not match envelope payload hash"},
		"logged after the certificate expired": {
			bundle: s.Attest(t, issuer, workflow, good, sigstoretest.Opts{At: time.Now().Add(30 * time.Minute), NoTimestamp: true}), want: "outside certificate validity"},
		"CA not trusted when signed": {bundle: s.Attest(t, issuer, workflow, good, sigstoretest.Opts{}), v: mustVerifier(t, expiredCARoot(t, s), Identity{Issuer: issuer, Subject: workflow}), want: "leaf certificate verification failed"},
		"another Sigstore":           {bundle: sigstoretest.New(t).Attest(t, issuer, workflow, good, sigstoretest.Opts{}), want: "not enough verified log entries"},
		"no Rekor entry":             {bundle: s.Attest(t, issuer, workflow, good, sigstoretest.Opts{NoTlog: true}), want: "not enough verified log entries"},
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

// expiredCARoot is vs's trusted root with its Fulcio CA trusted only until
// an hour ago (as a rotated-out CA is listed).
func expiredCARoot(t *testing.T, s sigstoretest.Sigstore) string {
	t.Helper()
	var cas []root.CertificateAuthority
	for _, c := range s.VS.FulcioCertificateAuthorities() {
		f := *c.(*root.FulcioCertificateAuthority)
		f.ValidityPeriodStart, f.ValidityPeriodEnd = time.Now().Add(-48*time.Hour), time.Now().Add(-time.Hour)
		cas = append(cas, &f)
	}
	return s.WriteRoot(t, cas, false)
}

// A root that lists CT logs requires the certificate's signed certificate
// timestamp, as cosign does for Fulcio's certificates: a certificate
// without one is refused.
func TestSCTRequiredWhenRootListsCTLogs(t *testing.T) {
	s := sigstoretest.New(t)
	v := mustVerifier(t, s.WriteRoot(t, s.VS.FulcioCertificateAuthorities(), true), Identity{Issuer: issuer, Subject: workflow})
	_, _, err := v.VerifyAttestation(s.Attest(t, issuer, workflow, statement(t, subject, predicateType), sigstoretest.Opts{}), subject, predicateType)
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
	if _, err := LoadVerifier(sigstoretest.New(t).Root, nil); err == nil {
		t.Error("a verifier without identities was made")
	}
	p := filepath.Join(t.TempDir(), "trusted_root.json")
	os.WriteFile(p, []byte(`{"mediaType":"application/json"}`), 0o644)
	if _, err := LoadVerifier(p, []Identity{{Issuer: issuer, Subject: workflow}}); err == nil || !strings.Contains(err.Error(), "not a Sigstore trusted root") {
		t.Errorf("a broken trusted root: %v", err)
	}
}

// The statement judged is the one sigstore-go verified, not a second
// decode of the payload: a payload that writes the predicate type under
// its proto field name (which protojson reads and encoding/json does
// not) is the predicate type sigstore-go and cosign see, and the
// predicate comes back as verified.
func TestKeylessStatementIsTheVerifiedOne(t *testing.T) {
	s := sigstoretest.New(t)
	v := mustVerifier(t, s.Root, Identity{Issuer: issuer, Subject: workflow})
	payload := []byte(`{"_type":"` + attest.StatementType + `","subject":[{"name":"x","digest":{"sha256":"` + subject.Encoded() + `"}}],` +
		`"predicate_type":"` + predicateType + `","predicate":{"signature":"verified"}}`)
	st, _, err := v.VerifyAttestation(s.Attest(t, issuer, workflow, payload, sigstoretest.Opts{}), subject, predicateType)
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	if st.PredicateType != predicateType || !strings.Contains(string(st.Predicate), "verified") {
		t.Errorf("statement %+v, want the verified predicate type and predicate", st)
	}
	other := []byte(strings.Replace(string(payload), predicateType, "https://example.com/other/v1", 1))
	if _, _, err := v.VerifyAttestation(s.Attest(t, issuer, workflow, other, sigstoretest.Opts{}), subject, predicateType); err == nil || !strings.Contains(err.Error(), "has predicate type https://example.com/other/v1") {
		t.Errorf("another verified predicate type: %v, want refused naming it", err)
	}
}
