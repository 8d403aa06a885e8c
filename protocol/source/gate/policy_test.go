package gate_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/source/gate"
)

func mustPolicy(t *testing.T, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(src), "policy.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// One list of versions is judged by one policy: while reloads swap a
// policy that allows everything for one that denies everything, every
// Allowed answer is all of the versions or none of them.
func TestOneListingOnePolicyGeneration(t *testing.T) {
	allow, deny := mustPolicy(t, `default = "allow"`), mustPolicy(t, `default = "deny"`)
	live := policy.NewLive(allow)
	judge := &gate.Policy{Live: live, Log: slog.New(slog.DiscardHandler)}
	vs := make([]names.Version, 2000)
	for i := range vs {
		v, err := names.ParseVersion(fmt.Sprintf("1.0.%d", i))
		if err != nil {
			t.Fatal(err)
		}
		vs[i] = v
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			live.Replace([]*policy.Policy{allow, deny}[i%2])
		}
	}()
	defer func() { close(stop); <-done }()
	for range 50 {
		if got := len(judge.Allowed(names.KindProvider, "example.com/test/hello", vs)); got != 0 && got != len(vs) {
			t.Fatalf("one listing allowed %d of %d versions: judged by two policies", got, len(vs))
		}
	}
}

// The gate lists what the policy file deprecates with the message, and
// leaves out what it revokes, the denial carrying the message.
func TestGateListsDeprecationsAndRevocations(t *testing.T) {
	pol := mustPolicy(t, `
provider "example.com/acme/aws" {
  deprecated {
    versions = "< 1.1.0"
    message  = "1.0 is too old"
  }
  revoked {
    versions = "2.0.0"
    message  = "CVE-2026-1: leaks"
  }
}`)
	judge := &gate.Policy{Live: policy.NewLive(pol), Log: slog.New(slog.DiscardHandler)}
	inner := &heldProviders{versions: []string{"1.0.0", "1.1.0", "2.0.0"}}
	g := &gate.Providers{Inner: inner, Each: each, Judge: judge}
	l, err := g.ProviderVersions(context.Background(), p, names.ViaRegistry, source.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Deprecated) != 1 || l.Deprecated["1.0.0"] != "1.0 is too old" {
		t.Errorf("deprecated %v, want 1.0.0's message alone", l.Deprecated)
	}
	var d *source.Denied
	if !errors.As(l.Left["2.0.0"], &d) || !strings.HasSuffix(d.Reason, "is revoked by the policy's rule \"example.com/acme/aws\": CVE-2026-1: leaks") {
		t.Errorf("2.0.0 left out for %v, want the revocation with its message", l.Left["2.0.0"])
	}
	if _, err := g.ResolveProvider(context.Background(), p, names.MustParseVersion("2.0.0"), names.ViaRegistry); !errors.As(err, &d) || !strings.Contains(err.Error(), "CVE-2026-1: leaks") {
		t.Errorf("asked for 2.0.0: %v, want the revocation", err)
	}
}
