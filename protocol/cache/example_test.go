package cache_test

import (
	"context"
	"fmt"
	"time"

	"github.com/oci-tofu/oci-tofu/protocol/cache"
)

// A cache of tag lists: fresh for a minute, then served stale for up to
// five more while one background fetch revalidates it.
func ExampleCache_Get() {
	tags := cache.New[[]string](cache.Options{Name: "tags", TTL: time.Minute, MaxStale: 5 * time.Minute})
	fetch := func(ctx context.Context) ([]string, int64, error) {
		fmt.Println("asking the registry")
		return []string{"1.0.0", "1.1.0"}, 32, nil
	}
	for i := 0; i < 3; i++ {
		r, err := tags.Get(context.Background(), "ghcr.io/acme/providers/acme/widgets", fetch)
		fmt.Println(r.Val, err)
	}
	// Output:
	// asking the registry
	// [1.0.0 1.1.0] <nil>
	// [1.0.0 1.1.0] <nil>
	// [1.0.0 1.1.0] <nil>
}
