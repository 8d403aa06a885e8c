package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// Check refuses what Decide denies with an error that is ErrDenied and
// names the rule; it allows what Decide allows, and everything without a
// policy.
func TestCheck(t *testing.T) {
	p, err := Parse([]byte("provider \"*/*/*\" {\n  name = \"ban\"\n  versions = \">= 1.0\"\n  deny = [\"2.0.0\"]\n}\n"), "p.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(names.KindProvider, "example.com/acme/widgets", "1.9.1"); err != nil {
		t.Errorf("1.9.1: %v", err)
	}
	err = p.Check(names.KindProvider, "example.com/acme/widgets", "2.0.0")
	var de *DeniedError
	if !errors.Is(err, ErrDenied) || !errors.As(err, &de) || de.Decision.Rule != "ban" || !strings.Contains(err.Error(), `rule "ban"`) {
		t.Errorf("2.0.0: %v", err)
	}
	if err := (*Policy)(nil).Check(names.KindProvider, "example.com/acme/widgets", "2.0.0"); err != nil {
		t.Errorf("no policy: %v", err)
	}
}

func TestAddressFromRepository(t *testing.T) {
	for _, c := range []struct {
		kind       names.Kind
		repo, want string
	}{
		{names.KindProvider, "ghcr.io/acme/providers/Acme/widgets", "registry.opentofu.org/acme/widgets"},
		{names.KindModule, "modules/acme/network/aws", "registry.opentofu.org/acme/network/aws"},
		{names.KindTofu, "tools/opentofu", "tofu"},
		{names.KindModule, "network/aws", ""},
	} {
		got, err := AddressFromRepository(c.kind, c.repo)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("%s %s: %q, %v; want %q", c.kind, c.repo, got, err, c.want)
		}
	}
}
