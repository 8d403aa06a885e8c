package attest

import (
	"context"
	"strings"
	"testing"
)

func TestVerifyAttestationWithAnyKey(t *testing.T) {
	ctx := context.Background()
	repo := layout(t)
	subject := pushRoot(t, repo)
	a, b := ecdsaSigner(t), ecdsaSigner(t)
	_, refusal, err := VerifyAttestation(ctx, repo, subject, []*Verifier{a.Public()}, testPredicateType)
	if err != nil || refusal == nil || !strings.Contains(refusal.Error(), "no attestation") {
		t.Fatalf("unattested: refusal %v, err %v", refusal, err)
	}
	if _, err := Attach(ctx, repo, "example.com/acme/hello", subject, a, testPredicateType, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	st, refusal, err := VerifyAttestation(ctx, repo, subject, []*Verifier{b.Public(), a.Public()}, testPredicateType)
	if err != nil || refusal != nil || st == nil || st.PredicateType != testPredicateType {
		t.Fatalf("attested by the second key: statement %v, refusal %v, err %v", st, refusal, err)
	}
	for name, keys := range map[string][]*Verifier{"another key": {b.Public()}, "no keys": nil} {
		if st, refusal, err := VerifyAttestation(ctx, repo, subject, keys, testPredicateType); err != nil || refusal == nil || st != nil {
			t.Errorf("%s: statement %v, refusal %v, err %v", name, st, refusal, err)
		}
	}
	if _, refusal, _ := VerifyAttestation(ctx, repo, subject, []*Verifier{a.Public()}, testPredicateType+"/other"); refusal == nil || !strings.Contains(refusal.Error(), "predicate type") {
		t.Errorf("another predicate type: refusal %v", refusal)
	}
}
