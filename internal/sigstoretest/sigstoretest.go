// Package sigstoretest makes what cosign's keyless signing makes, offline,
// for tests: a Sigstore (Fulcio CA, Rekor log, timestamp authority) from
// sigstore-go's testing CA (pkg/testing/ca), its trusted_root.json, and
// Sigstore bundles v0.3 holding DSSE-signed in-toto statements, each with
// a short-lived certificate for an OIDC identity, a Rekor entry (inclusion
// proof and signed entry timestamp) and an RFC 3161 timestamp. Only tests
// import it.
package sigstoretest

import (
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	protorekor "github.com/sigstore/protobuf-specs/gen/pb-go/rekor/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/testing/ca"
	"github.com/sigstore/sigstore-go/pkg/tlog"
	"google.golang.org/protobuf/encoding/protojson"
)

// BundleMediaType is the media type of the bundles made here.
const BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"

// Sigstore is an offline Sigstore; Root is its trusted_root.json. (The
// testing CA's certificates carry no signed certificate timestamps, so
// its CT log is left out of Root; WriteRoot with ctlog lists it.)
type Sigstore struct {
	VS   *ca.VirtualSigstore
	Root string
}

// New makes a Sigstore and writes its trusted root.
func New(t testing.TB) Sigstore {
	t.Helper()
	vs, err := ca.NewVirtualSigstore()
	if err != nil {
		t.Fatal(err)
	}
	s := Sigstore{VS: vs}
	s.Root = s.WriteRoot(t, vs.FulcioCertificateAuthorities(), false)
	return s
}

// WriteRoot writes a trusted_root.json with cas, the Rekor log and the
// timestamp authority, and the CT log if ctlog.
func (s Sigstore) WriteRoot(t testing.TB, cas []root.CertificateAuthority, ctlog bool) string {
	t.Helper()
	var ctlogs map[string]*root.TransparencyLog
	if ctlog {
		ctlogs = rawLogIDs(t, s.VS.CTLogs())
	}
	tr, err := root.NewTrustedRoot(root.TrustedRootMediaType01, cas, ctlogs, s.VS.TimestampingAuthorities(), rawLogIDs(t, s.VS.RekorLogs()))
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
func rawLogIDs(t testing.TB, logs map[string]*root.TransparencyLog) map[string]*root.TransparencyLog {
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

// Opts shape a bundle.
type Opts struct {
	At          time.Time // Rekor's integrated time (default: now + 5 min, inside the certificate's 10 minutes)
	NoTimestamp bool      // leave out the RFC 3161 timestamp
	NoTlog      bool      // leave out the Rekor entry
}

// Attest signs the in-toto statement body as identity of issuer
// (keyless: a fresh Fulcio certificate), logs it in Rekor and timestamps
// it, and returns the Sigstore bundle v0.3 JSON, as cosign attest writes it.
func (s Sigstore) Attest(t testing.TB, issuer, identity string, body []byte, o Opts) []byte {
	t.Helper()
	if o.At.IsZero() {
		o.At = time.Now().Add(5 * time.Minute)
	}
	e, err := s.VS.AttestAtTime(identity, issuer, body, o.At, true)
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
	if !o.NoTlog {
		entries, _ := e.TlogEntries()
		material.TlogEntries = []*protorekor.TransparencyLogEntry{s.withPromise(t, entries[0])}
	}
	if ts, _ := e.Timestamps(); !o.NoTimestamp {
		material.TimestampVerificationData = &protobundle.TimestampVerificationData{Rfc3161Timestamps: []*protocommon.RFC3161SignedTimestamp{{SignedTimestamp: ts[0]}}}
	}
	b, err := protojson.Marshal(&protobundle.Bundle{
		MediaType:            BundleMediaType,
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
func (s Sigstore) withPromise(t testing.TB, e *tlog.Entry) *protorekor.TransparencyLogEntry {
	t.Helper()
	tle := e.TransparencyLogEntry()
	set, err := s.VS.RekorSignPayload(tlog.RekorPayload{
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

// Tamper changes the first old in the bundle's DSSE payload to new,
// leaving the signature as it was.
func Tamper(t testing.TB, b []byte, old, new string) []byte {
	t.Helper()
	var pb protobundle.Bundle
	if err := protojson.Unmarshal(b, &pb); err != nil {
		t.Fatal(err)
	}
	env := pb.GetDsseEnvelope()
	before := string(env.Payload)
	env.Payload = []byte(strings.Replace(before, old, new, 1))
	if string(env.Payload) == before {
		t.Fatalf("%q is not in the payload", old)
	}
	out, err := protojson.Marshal(&pb)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
