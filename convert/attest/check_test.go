package attest

import (
	"context"
	"errors"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
)

// fixedCheck answers every Check with its refusal and err.
type fixedCheck struct {
	name         string
	refusal, err error
}

func (f fixedCheck) Name() string { return f.name }

func (f fixedCheck) Check(context.Context, oci.ReadOnlyRepository, string, digest.Digest, string) (error, error) {
	return f.refusal, f.err
}

// AnyOf admits when one check does, and otherwise says what is lacking
// and each check's refusal in order; Named prefixes a refusal with the
// check's name.
func TestAnyOf(t *testing.T) {
	no := func(name, why string) Checker { return fixedCheck{name: name, refusal: errors.New(why)} }
	cases := []struct {
		checks  []Checker
		refusal string
		err     bool
	}{
		{checks: []Checker{no("a", "no a"), fixedCheck{name: "b"}}},
		{checks: []Checker{no("a", "no a"), Named(no("b", "no b"))}, refusal: "lacking (no a; b: no b)"},
		{checks: nil, refusal: "lacking ()"},
		{checks: []Checker{no("a", "no a"), fixedCheck{name: "b", err: errors.New("down")}}, err: true},
	}
	for i, c := range cases {
		refusal, err := AnyOf("lacking", c.checks...).Check(t.Context(), nil, "r", "sha256:00", "pt")
		if (err != nil) != c.err {
			t.Errorf("case %d: err %v", i, err)
		}
		got := ""
		if refusal != nil {
			got = refusal.Error()
		}
		if got != c.refusal {
			t.Errorf("case %d: refusal %q, want %q", i, got, c.refusal)
		}
	}
	if n := AnyOf("x", no("a", ""), no("b", "")).Name(); n != "a or b" {
		t.Errorf("Name %q", n)
	}
}
