package lockfile_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/lockfile"
	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
)

// With a policy, Lock chooses the newest version it allows; a locked
// version it denies, or nothing allowed, is an error naming the rule.
func TestLockWithPolicy(t *testing.T) {
	s := newStore(t)
	s.pushHello(t, "1.0.0")
	s.pushHello(t, "1.1.0")
	opts := s.options(t, tfconfig.Tofu, "linux_amd64")
	pol, err := policy.Parse([]byte("provider \"example.com/test/hello\" {\n  name = \"no-1.1\"\n  deny = [\"1.1.0\"]\n}\n"), "p.hcl")
	if err != nil {
		t.Fatal(err)
	}
	opts.Policy = pol
	lf, err := lockfile.Lock(context.Background(), requirement(t, ">= 1.0"), nil, opts)
	if err != nil || lf.Providers[0].Version != "1.0.0" {
		t.Fatalf("locked %+v, %v; want 1.0.0", lf, err)
	}
	prior := &lockfile.File{Providers: []lockfile.Provider{{Address: "example.com/test/hello", Version: "1.1.0"}}}
	if _, err := lockfile.Lock(context.Background(), requirement(t, ">= 1.0"), prior, opts); !errors.Is(err, policy.ErrDenied) || !strings.Contains(err.Error(), `rule "no-1.1"`) {
		t.Errorf("a denied locked version: %v", err)
	}
	if _, err := lockfile.Lock(context.Background(), requirement(t, "~> 1.1.0"), nil, opts); !errors.Is(err, policy.ErrDenied) || !strings.Contains(err.Error(), "1 left out") {
		t.Errorf("nothing allowed: %v", err)
	}
}

// A deprecated version is locked, with the policy's message for the
// client to be warned of; a revoked one is refused like a denied one,
// naming the message.
func TestLockDeprecatedAndRevoked(t *testing.T) {
	s := newStore(t)
	s.pushHello(t, "1.0.0")
	s.pushHello(t, "1.1.0")
	opts := s.options(t, tfconfig.Tofu, "linux_amd64")
	pol, err := policy.Parse([]byte(`provider "example.com/test/hello" {
  deprecated {
    versions = "1.0.0"
    message  = "1.0 is end of life"
  }
  revoked {
    versions = "1.1.0"
    message  = "CVE-2026-0001"
  }
}
`), "p.hcl")
	if err != nil {
		t.Fatal(err)
	}
	opts.Policy = pol
	lf, err := lockfile.Lock(context.Background(), requirement(t, ">= 1.0"), nil, opts)
	if err != nil || lf.Providers[0].Version != "1.0.0" || lf.Providers[0].Deprecated != "1.0 is end of life" {
		t.Fatalf("locked %+v, %v; want 1.0.0, deprecated", lf, err)
	}
	if strings.Contains(string(lf.Bytes()), "end of life") {
		t.Errorf("the lock file carries the deprecation:\n%s", lf.Bytes())
	}
	prior := &lockfile.File{Providers: []lockfile.Provider{{Address: "example.com/test/hello", Version: "1.1.0"}}}
	if _, err := lockfile.Lock(context.Background(), requirement(t, ">= 1.0"), prior, opts); !errors.Is(err, policy.ErrDenied) || !strings.Contains(err.Error(), "is revoked by the policy's rule \"example.com/test/hello\": CVE-2026-0001") {
		t.Errorf("a revoked locked version: %v", err)
	}
}
