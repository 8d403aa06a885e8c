// Package held is the source of what the registry holds: every answer is
// read through the store from the repositories the mappings name.
package held

import (
	"context"
	"log/slog"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Tofu is the source of the OpenTofu releases (oci-tofu push tofu) one
// repository holds.
type Tofu struct {
	Repo *store.Repo
	Log  *slog.Logger
}

var _ source.Tofu = (*Tofu)(nil)

// TofuVersions lists the tags that name OpenTofu versions as TofuDL
// writes them (1.9.0, 1.10.0-beta1) and that OpenTofu resolves. A
// repository that does not exist (yet) has none.
func (t *Tofu) TofuVersions(ctx context.Context) (source.Listing, error) {
	l, err := t.Repo.Versions(ctx)
	if store.FailureOf(err) == oci.FailureNotFound {
		t.Log.Warn("the OpenTofu release repository does not exist", "repository", t.Repo.Name())
		return source.Listing{At: time.Now()}, nil
	}
	if err != nil {
		return source.Listing{At: l.At}, err
	}
	out := source.Listing{At: l.At}
	for _, v := range l.Versions {
		if _, bad := l.Unresolvable[v.String()]; !bad && names.IsTofuVersion(v.String()) {
			out.Versions = append(out.Versions, source.Listed{Version: v, Stored: true})
		}
	}
	return out, nil
}

// TofuRelease reads the release version v's tag names.
func (t *Tofu) TofuRelease(ctx context.Context, v names.Version) (*source.TofuEntry, error) {
	rel, err := t.stored(ctx, v)
	if err != nil {
		if store.FailureOf(err) == oci.FailureInvalid {
			t.Log.Warn("OpenTofu version left out: not a valid release artifact", "version", v.String(), "error", err)
		}
		return nil, err
	}
	return &source.TofuEntry{Version: v, Files: rel.Names, Root: &source.Root{Repo: t.Repo, Digest: rel.Digest}}, nil
}

// OpenTofuFile is a file of the release v's tag names. Download URLs
// name a version, not a digest: the file is not pinned.
func (t *Tofu) OpenTofuFile(ctx context.Context, v names.Version, name string) (*source.Blob, error) {
	rel, err := t.stored(ctx, v)
	if err != nil {
		return nil, err
	}
	return TofuFile(t.Repo, rel, v, name)
}

// stored reads release v, NotFound marked ErrNotHeld when the registry
// does not hold it.
func (t *Tofu) stored(ctx context.Context, v names.Version) (*store.StoredTofu, error) {
	rel, err := t.Repo.StoredTofu(ctx, v)
	if err != nil {
		return nil, source.MarkNotHeld(source.Missing(err, "OpenTofu release repository", "OpenTofu %s is not in this mirror", v))
	}
	return rel, nil
}

// TofuFile is file name of rel, a release repo holds.
func TofuFile(repo *store.Repo, rel *store.StoredTofu, v names.Version, name string) (*source.Blob, error) {
	desc, ok := rel.Files[name]
	if !ok {
		return nil, source.NotFoundf("OpenTofu %s has no file %s", v, name)
	}
	return &source.Blob{Name: name, ContentType: source.FileType(name), Repo: repo, Layer: desc}, nil
}
