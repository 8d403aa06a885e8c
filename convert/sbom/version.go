package sbom

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// StoredVersion is a provider version in a repository, whose platforms'
// SBOMs are read one by one (Read).
type StoredVersion struct {
	*oci.ProviderVersion
	repo oci.ReadOnlyRepository
}

// ResolveVersion resolves version v of the provider repo holds.
func ResolveVersion(ctx context.Context, repo oci.ReadOnlyRepository, v names.Version) (*StoredVersion, error) {
	pv, err := oci.ResolveProvider(ctx, repo, v)
	if err != nil {
		return nil, err
	}
	return &StoredVersion{ProviderVersion: pv, repo: repo}, nil
}

// Choose is the platforms to read: those asked for, each of which the
// version must have ("has no … platform (it has …)"), else all of them.
func (sv *StoredVersion) Choose(asked []names.Platform) ([]names.Platform, error) {
	if len(asked) == 0 {
		return sv.SortedPlatforms(), nil
	}
	for _, p := range asked {
		if _, ok := sv.Platforms[p]; !ok {
			return nil, fmt.Errorf("has no %s platform (it has %s)", p, sv.PlatformList())
		}
	}
	return asked, nil
}

// PlatformList is the version's platforms, sorted, comma-separated.
func (sv *StoredVersion) PlatformList() string {
	var s []string
	for _, p := range sv.SortedPlatforms() {
		s = append(s, p.String())
	}
	return strings.Join(s, ", ")
}

// Read reads the SBOM stored for platform p (Read); ErrNoSBOM, when it
// has none, is wrapped with the platform and its manifest's digest.
func (sv *StoredVersion) Read(ctx context.Context, p names.Platform) (*Stored, error) {
	d := sv.Platforms[p].Digest
	st, err := Read(ctx, sv.repo, d)
	if errors.Is(err, ErrNoSBOM) {
		return nil, fmt.Errorf("%s (%s): %w", p, d, err)
	}
	return st, err
}
