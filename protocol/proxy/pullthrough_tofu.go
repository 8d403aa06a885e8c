package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// tofuListing is a TofuDL origin's api.json: the files of each version.
type tofuListing struct {
	files    map[string][]string
	versions names.VersionList
}

// tofuEnabled reports whether OpenTofu releases are pulled through.
func (pt *pullThrough) tofuEnabled() bool { return pt != nil && pt.opts.Tofu != nil }

// tofuOffered reads the origin's api.json (cached like provider listings).
func (pt *pullThrough) tofuOffered(ctx context.Context) (tofuListing, time.Time, error) {
	res, err := pt.tofuAPI.Get(ctx, "api", func(ctx context.Context) (tofuListing, int64, error) {
		files, vs, err := pt.opts.Tofu.Versions(ctx, pt.client)
		if err != nil {
			pt.reportOriginError("tofu", pt.opts.Tofu.API.Redacted(), err)
			return tofuListing{}, 0, err
		}
		l := tofuListing{files: files}
		cost := int64(256)
		for _, v := range vs {
			if names.IsTofuVersion(v.String()) {
				l.versions = append(l.versions, v)
				cost += int64(64 * (len(files[v.String()]) + 1))
			}
		}
		return l, cost, nil
	})
	return res.Val, res.Fetched, err
}

func tofuFailKey(v names.Version) string { return "tofu " + v.String() }

// tofuRelease is the origin's release v, its SHA256SUMS signature verified
// with the configured keys (cached); failures are remembered.
func (pt *pullThrough) tofuRelease(ctx context.Context, v names.Version) (*ingest.TofuOriginRelease, error) {
	fk := tofuFailKey(v)
	host := pt.opts.Tofu.API.Host
	if err := pt.remembered("tofu", fk, host); err != nil {
		return nil, err
	}
	res, err := pt.tofuRels.Get(ctx, fk, func(ctx context.Context) (*ingest.TofuOriginRelease, int64, error) {
		l, _, err := pt.tofuOffered(ctx)
		if err != nil {
			return nil, 0, err
		}
		listed, ok := l.files[v.String()]
		if !ok {
			return nil, 0, fmt.Errorf("OpenTofu %s: %w", v, origin.ErrNotFound)
		}
		rel, err := pt.opts.Tofu.Resolve(ctx, pt.client, v, listed)
		if err != nil {
			pt.reportOriginError("tofu", "OpenTofu "+v.String(), err)
			if kind := originFailure(err); kind == "tampered" {
				pt.failures.Add(fk, err, 0)
				pt.metrics.result("tofu", kind)
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

// pullAPIDoc is api.json with pull-through: the releases the registry
// holds and those the origin offers besides (with the files pull-through
// would take), newest first. With the origin failing: what the registry
// holds, logged and counted.
func (t *tofuMirror) pullAPIDoc(ctx context.Context) (any, time.Time, error) {
	pt := t.s.pull
	d, at, err := t.apiDoc(ctx)
	if err != nil {
		return nil, at, err
	}
	doc := d.(wire.TofuAPI)
	have := map[string]bool{}
	for _, v := range doc.Versions {
		have[v.ID] = true
	}
	for _, sv := range pt.recent.list(t.repo.Name()) {
		if !have[sv.version.String()] {
			doc.Versions = append(doc.Versions, wire.TofuVersion{ID: sv.version.String(), Files: sv.files})
			have[sv.version.String()] = true
		}
	}
	l, fetched, oerr := pt.tofuOffered(ctx)
	if oerr != nil {
		if len(doc.Versions) == 0 {
			return nil, at, originError(pt.opts.Tofu.API.Host, oerr)
		}
		pt.degradedListing("tofu", pt.opts.Tofu.API.Redacted(), oerr)
		sortTofuVersions(doc.Versions)
		return doc, at, nil
	}
	for _, v := range l.versions {
		if have[v.String()] {
			continue
		}
		doc.Versions = append(doc.Versions, wire.TofuVersion{ID: v.String(), Files: pt.opts.Tofu.WantedFiles(v, l.files[v.String()])})
	}
	sortTofuVersions(doc.Versions)
	return doc, earliestNonZero(at, fetched), nil
}

// tofuPullKey names the pull of release v into the TofuDL repository.
func (t *tofuMirror) tofuPullKey(v names.Version) string {
	return "tofu " + t.repo.Name() + " " + v.String()
}

// servePulledTofu serves a file of a release the registry does not hold:
// from the pull in flight, from the registry once stored, or from the
// origin, SHA256SUMS and its signature first (a client asks for them
// before the archive), an archive as it downloads.
func (t *tofuMirror) servePulledTofu(w http.ResponseWriter, r *http.Request, req TofuDownloadRequest) {
	t.s.serveWhilePulling(w, r, func() bool { return t.servePulledTofuFile(w, r, req) })
}

func (t *tofuMirror) servePulledTofuFile(w http.ResponseWriter, r *http.Request, req TofuDownloadRequest) bool {
	s, pt := t.s, t.s.pull
	key := t.tofuPullKey(req.Version)
	p, _, _ := pt.inflightFile(key, "") // no file asked: no error
	var rel *ingest.TofuOriginRelease
	if p != nil {
		rel = p.tofu
	} else if res, ok := pt.completed.Peek(key); ok {
		desc, ok := res.files[req.Artifact]
		if !ok {
			s.fail(w, r, notFound("OpenTofu %s has no file %s", req.Version, req.Artifact))
			return true
		}
		s.serveBlob(w, r, t.repo, desc, blobFile{name: req.Artifact, contentType: releaseFileType(req.Artifact)})
		return true
	} else {
		var err error
		if rel, err = pt.tofuRelease(r.Context(), req.Version); err != nil {
			s.fail(w, r, err)
			return true
		}
	}
	if name := req.Artifact; name == rel.SumsName() || name == rel.SignatureName() {
		body := rel.SHA256SUMS
		if name != rel.SumsName() {
			body = rel.Signature
		}
		s.writeSmallFile(w, r, body, releaseFileType(name))
		return true
	}
	if !rel.Has(req.Artifact) {
		s.fail(w, r, notFound("OpenTofu %s has no file %s (or pull-through does not take it)", req.Version, req.Artifact))
		return true
	}
	_, g, err := pt.startTofu(t, req.Version, rel, req.Artifact)
	switch {
	case errors.Is(err, errPullFinished):
		return false
	case err != nil:
		s.fail(w, r, err)
		return true
	}
	s.streamPulled(w, r, g, blobFile{name: req.Artifact, contentType: releaseFileType(req.Artifact)})
	return true
}

// startTofu returns the pull of an OpenTofu release, starting it when none
// runs, and the file demand on its way.
func (pt *pullThrough) startTofu(t *tofuMirror, v names.Version, rel *ingest.TofuOriginRelease, demand string) (*pull, *growingFile, error) {
	key := t.tofuPullKey(v)
	return pt.start(key, func() (*pull, error) {
		repo, err := pt.s.client.Open(t.repo.Reference())
		if err != nil {
			return nil, err
		}
		p, err := pt.newPull("tofu", key, "OpenTofu "+v.String(), repo, rel.Downloads(), rel.WriteChecksums)
		if err != nil {
			return nil, err
		}
		p.failKey, p.tofu = tofuFailKey(v), rel
		p.open = func(ctx context.Context, name string) (*origin.Body, error) { return rel.Open(ctx, pt.client, name) }
		p.want = rel.SHA256
		p.mediaType = func(string) string { return oci.MediaTypeReleaseFile }
		p.finish = func(ctx context.Context, dir string) (pulled, error) {
			r, res, err := pt.opts.Tofu.PushDir(ctx, dir, repo, oci.PushOptions{})
			if err != nil {
				return pulled{}, err
			}
			out := pulled{root: res.Root, files: map[string]ocispec.Descriptor{}}
			var names []string
			for _, f := range r.Files {
				out.files[f.Name] = ocispec.Descriptor{MediaType: oci.MediaTypeReleaseFile, Digest: digest.NewDigestFromEncoded(digest.SHA256, f.SHA256), Size: f.Size}
				names = append(names, f.Name)
			}
			pt.recent.add(t.repo.Name(), storedVersion{version: v, files: names})
			return out, nil
		}
		return p, nil
	}, demand)
}
