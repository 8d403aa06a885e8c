package gate_test

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci/names"
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
		if got := len(judge.Allowed(policy.KindProvider, "example.com/test/hello", vs)); got != 0 && got != len(vs) {
			t.Fatalf("one listing allowed %d of %d versions: judged by two policies", got, len(vs))
		}
	}
}
