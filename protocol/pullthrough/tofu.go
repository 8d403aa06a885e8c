package pullthrough

import (
	"context"
	"fmt"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// TofuListing is a TofuDL origin's api.json: the files of each version.
type TofuListing struct {
	Files    map[string][]string
	Versions names.VersionList
}

// TofuOrigin is the TofuDL origin OpenTofu releases are pulled from (nil
// without).
func (e *Engine) TofuOrigin() *ingest.TofuOrigin {
	if e == nil {
		return nil
	}
	return e.opts.Tofu
}

// TofuOffered reads the origin's api.json (cached like provider listings).
func (e *Engine) TofuOffered(ctx context.Context) (TofuListing, time.Time, error) {
	res, err := e.tofuAPI.Get(ctx, "api", func(ctx context.Context) (TofuListing, int64, error) {
		files, vs, err := e.opts.Tofu.Versions(ctx, e.opts.Client)
		if err != nil {
			e.reportOriginError(names.KindTofu, e.opts.Tofu.API.Redacted(), err)
			return TofuListing{}, 0, err
		}
		l := TofuListing{Files: files}
		cost := int64(256)
		for _, v := range vs {
			if names.IsTofuVersion(v.String()) {
				l.Versions = append(l.Versions, v)
				cost += int64(64 * (len(files[v.String()]) + 1))
			}
		}
		return l, cost, nil
	})
	if err != nil {
		return TofuListing{}, res.Fetched, originError(e.opts.Tofu.API.Host, err)
	}
	return res.Val, res.Fetched, nil
}

func tofuFailKey(v names.Version) string { return "tofu " + v.String() }

// TofuRelease is the origin's release v, its SHA256SUMS signature
// verified with the configured keys (cached); failures are remembered.
func (e *Engine) TofuRelease(ctx context.Context, v names.Version) (*ingest.TofuOriginRelease, error) {
	fk := tofuFailKey(v)
	host := e.opts.Tofu.API.Host
	if err := e.remembered(ctx, names.KindTofu, fk, host); err != nil {
		return nil, err
	}
	res, err := e.tofuRels.Get(ctx, fk, func(ctx context.Context) (*ingest.TofuOriginRelease, int64, error) {
		l, _, err := e.TofuOffered(ctx)
		if err != nil {
			return nil, 0, err
		}
		listed, ok := l.Files[v.String()]
		if !ok {
			return nil, 0, fmt.Errorf("OpenTofu %s: %w", v, origin.ErrNotFound)
		}
		rel, err := e.opts.Tofu.Resolve(ctx, e.opts.Client, v, listed)
		if err != nil {
			e.reportOriginError(names.KindTofu, "OpenTofu "+v.String(), err)
			if kind := Classify(err); kind == FailureTampered {
				e.rememberFailure(fk, err)
				e.metrics.result(names.KindTofu, kind)
			}
			return nil, 0, err
		}
		return rel, int64(len(rel.SHA256SUMS) + len(rel.Signature) + 64*len(rel.Files) + 1024), nil
	})
	if err != nil {
		return nil, originError(host, err)
	}
	return res.Val, nil
}

// TofuPullKey names the pull of release v into the repository named repo.
func TofuPullKey(repo string, v names.Version) string {
	return "tofu " + repo + " " + v.String()
}

// StartTofu returns the pull of an OpenTofu release into the TofuDL
// repository, starting it when none runs, and the file demand on its way.
// ErrFinished means the release was stored meanwhile; wait as for
// StartProvider.
func (e *Engine) StartTofu(ctx context.Context, v names.Version, rel *ingest.TofuOriginRelease, demand string, wait bool) (*Pull, *File, error) {
	key := TofuPullKey(e.tofuRepo.Name(), v)
	return e.start(ctx, names.KindTofu, key, tofuFailKey(v), e.opts.Tofu.API.Host, nil, func() (*Pull, error) { return e.newTofuPull(v, rel, key) }, demand, wait)
}

// newTofuPull prepares the pull of an OpenTofu release.
func (e *Engine) newTofuPull(v names.Version, rel *ingest.TofuOriginRelease, key string) (*Pull, error) {
	repo, err := e.registry.Open(*e.tofuRepo)
	if err != nil {
		return nil, err
	}
	p, err := e.newPull(names.KindTofu, key, "OpenTofu "+v.String(), repo, rel.Downloads(), rel.WriteChecksums)
	if err != nil {
		return nil, err
	}
	p.failKey, p.tofu = tofuFailKey(v), rel
	p.open = func(ctx context.Context, name string) (*origin.Body, error) {
		return rel.Open(ctx, e.opts.Client, name)
	}
	p.want = rel.SHA256
	p.mediaType = func(string) string { return oci.MediaTypeReleaseFile }
	p.finish = func(ctx context.Context, dir string) (Stored, error) {
		// Attested (with Options.Attest) before it is tagged.
		r, res, err := e.opts.Tofu.PushDirAttested(ctx, dir, repo, e.tofuRepo.Name(), oci.PushOptions{}, e.opts.Attest)
		if err != nil {
			return Stored{}, err
		}
		out := Stored{Root: res.Root, Files: map[string]ocispec.Descriptor{}}
		var stored []string
		for _, f := range r.Files {
			out.Files[f.Name] = ocispec.Descriptor{MediaType: oci.MediaTypeReleaseFile, Digest: digest.NewDigestFromEncoded(digest.SHA256, f.SHA256), Size: f.Size}
			stored = append(stored, f.Name)
		}
		e.recent.add(e.tofuRepo.Name(), StoredVersion{Version: v, Files: stored})
		return out, nil
	}
	return p, nil
}
