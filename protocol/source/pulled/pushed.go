package pulled

import (
	"context"

	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// HoldsPushedVersions reports whether repo holds versions and lacks the
// tag pull-through marks its repositories with (pullthrough/own.go): the
// versions were pushed, and under the proxy's own hostname no origin is
// merged with them, pulled over them, or asked about them.
func HoldsPushedVersions(ctx context.Context, repo *store.Repo) (bool, error) {
	l, err := repo.Versions(ctx)
	switch {
	case source.Absent(err):
		return false, nil
	case err != nil:
		return false, err
	case len(l.Versions) == 0:
		return false, nil
	}
	marked, err := repo.HasTag(ctx, pullthrough.PulledThroughTag)
	return !marked, err
}
