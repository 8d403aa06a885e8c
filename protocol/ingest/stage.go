package ingest

import (
	"context"
	"os"

	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/oci"
)

// stagedRelease is a release on its way from an origin to a repository:
// its checksums, the files to fetch, and the push of the complete
// directory.
type stagedRelease[F any] struct {
	writeChecksums func(dir string) error
	files          []F
	fetch          func(ctx context.Context, f F, dir string) error
	push           func(dir string) (oci.PushResult, error)
}

// stageAndPush writes the checksums into a temporary directory, fetches
// the files into it (at most concurrency at once; the first failure stops
// the others), pushes the directory and removes it.
func stageAndPush[F any](ctx context.Context, concurrency int, rel stagedRelease[F]) (oci.PushResult, error) {
	dir, err := os.MkdirTemp("", "oci-tofu-mirror-")
	if err != nil {
		return oci.PushResult{}, err
	}
	defer os.RemoveAll(dir)
	if err := rel.writeChecksums(dir); err != nil {
		return oci.PushResult{}, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	for _, f := range rel.files {
		g.Go(func() error { return rel.fetch(gctx, f, dir) })
	}
	if err := g.Wait(); err != nil {
		return oci.PushResult{}, err
	}
	return rel.push(dir)
}
