package ingest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/convert/modulepkg"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// Replicas that cannot coordinate (their shared Redis is down) pull the
// same module version into the same repository at once: each writes the
// pull-through marker and then the version, as StoreModule does, and
// every one of them succeeds with the same package (Distribution answers
// a manifest naming a blob another push is still linking "blob unknown";
// that is a race to wait out, not a failure).
func TestConcurrentModuleStoresIntoOneRepository(t *testing.T) {
	ctx := context.Background()
	reg := testenv.StartRegistry(t)
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	const repos, replicas = 8, 3
	for r := range repos {
		ref := oci.Reference{Registry: reg.Host, Repository: fmt.Sprintf("pulled/race%d/greeting/aws", r)}
		var wg sync.WaitGroup
		errs := make([]error, replicas)
		for i := range replicas {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = storeLikeAReplica(ctx, t, client, ref)
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("%s, replica %d: %v", ref.Repository, i, err)
			}
		}
	}
}

// storeLikeAReplica packs the greeting fixture and stores it as
// StoreModule does once the tree is fetched: marker first, then the
// version with its interface.
func storeLikeAReplica(ctx context.Context, t *testing.T, client *oci.Client, ref oci.Reference) error {
	target := modulepkg.Target{Client: client, Ref: ref, Tags: []string{"1.0.0"}}
	pkg, err := modulepkg.Prepare(ctx, testenv.Testdata(t, "modules", "greeting"), target, modulepkg.Options{TempDir: t.TempDir()})
	if err != nil {
		return err
	}
	defer pkg.Remove()
	if err := markPulledThrough(ctx, ModuleTarget{Client: client, Ref: ref}, pkg); err != nil {
		return err
	}
	_, err = moduledoc.Push(ctx, pkg, target, moduledoc.PushOptions{})
	return err
}
