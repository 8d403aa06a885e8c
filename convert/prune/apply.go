package prune

import (
	"context"
	"fmt"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
)

// Apply deletes the versions the plan lets go, oldest first, each
// manifest in its plan's order, recording in each entry what it deleted.
// A manifest already gone counts as deleted (an earlier prune was
// interrupted, or another version shared it). It stops at the first
// failure: the order keeps every tag naming a whole manifest only while
// the deletes run in it, and a registry that refuses one delete refuses
// the rest. host names the registry in the error.
func Apply(ctx context.Context, del oci.ManifestDeleter, host string, p *Plan) error {
	done := map[digest.Digest]bool{}
	for i := len(p.Versions) - 1; i >= 0; i-- {
		e := &p.Versions[i]
		if !e.Goes() {
			continue
		}
		for _, d := range e.Deletes {
			if done[d.Digest] {
				continue
			}
			err := del.Delete(ctx, d)
			if err != nil && !oci.IsNotFound(err) {
				e.Err = deleteError(host, d.Digest, err)
				return fmt.Errorf("%s %s: %w", p.Repository.Name, e.Tag, e.Err)
			}
			done[d.Digest] = true
			e.Deleted = append(e.Deleted, d.Digest)
		}
	}
	return nil
}

// deleteError says what failed, and for a registry that does not delete
// through its API, what to do instead.
func deleteError(host string, d digest.Digest, err error) error {
	if oci.IsDeleteRefused(err) {
		return fmt.Errorf("the registry %s refuses to delete %s (%w): enable deletes (Distribution: storage.delete.enabled: true), give credentials allowed to delete, or delete through the registry's own UI or API (GHCR: the package's settings page or the GitHub REST API's package versions endpoint)", host, d, err)
	}
	return fmt.Errorf("deleting %s: %w", d, err)
}
