package protocol

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/apparentlymart/go-versions/versions"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// TofuDL mirror paths: the API document and the download URL template's
// base (https://HOST/tofu/download/v{{ .Version }}/{{ .Artifact }}).
const (
	TofuAPIPath        = "/tofu/api.json"
	TofuDownloadPrefix = "/tofu/download/"
)

// maxTofuFiles bounds the files of one release artifact.
const maxTofuFiles = 1000

// tofuMirror serves OpenTofu releases (oci-tofu push tofu) from one
// repository as a TofuDL mirror.
type tofuMirror struct {
	s    *Server
	ref  oci.Reference
	name string

	repo     *cache[oci.ReadOnlyRepository] // one entry, TTL
	tags     *cache[versions.List]          // one entry, TTL
	resolved *cache[ocispec.Descriptor]     // by tag, TTL
	releases *cache[*tofuRelease]           // by manifest digest
}

// tofuRelease is one release artifact as read and checked.
type tofuRelease struct {
	version string
	names   []string                      // file names, in the config's order
	files   map[string]ocispec.Descriptor // layer by file name
}

// mountTofu adds the TofuDL mirror for the releases in ref.
func (s *Server) mountTofu(ref oci.Reference) {
	n, ttl := s.opts.CacheEntries, s.opts.TagTTL
	t := &tofuMirror{
		s: s, ref: ref, name: ref.Name(),
		repo:     newCache[oci.ReadOnlyRepository]("tofu_repository", 1, ttl, s.metrics),
		tags:     newCache[versions.List]("tofu_tags", 1, ttl, s.metrics),
		resolved: newCache[ocispec.Descriptor]("tofu_resolve", n, ttl, s.metrics),
		releases: newCache[*tofuRelease]("tofu_releases", n, 0, s.metrics),
	}
	s.Mount("", TofuAPIPath, "tofu_api", s.Authenticate(http.HandlerFunc(t.serveAPI)))
	s.Mount("", TofuDownloadPrefix, "tofu_download", s.Authenticate(http.HandlerFunc(t.serveDownload)))
}

func (t *tofuMirror) repository(ctx context.Context) (oci.ReadOnlyRepository, error) {
	repo, err := t.repo.do(ctx, t.name, t.s.opts.UpstreamTimeout, func(ctx context.Context) (oci.ReadOnlyRepository, error) {
		return t.s.opts.Client.OpenReadOnly(ctx, t.ref)
	})
	if err != nil {
		if oci.IsNotFound(err) {
			return nil, notFound("the OpenTofu release repository does not exist (yet)")
		}
		return nil, t.s.src.upstream(err, "opening the OpenTofu release repository")
	}
	return repo, nil
}

// versions lists the tags that name OpenTofu versions as TofuDL writes
// them (1.9.0, 1.10.0-beta1); other tags are not releases.
func (t *tofuMirror) versions(ctx context.Context, repo oci.ReadOnlyRepository) (versions.List, error) {
	list, err := listVersions(ctx, t.tags, t.s.opts.UpstreamTimeout, repo, t.name)
	if err != nil {
		if oci.IsNotFound(err) {
			return nil, nil
		}
		return nil, t.s.src.upstream(err, "listing the OpenTofu release tags")
	}
	out := make(versions.List, 0, len(list))
	for _, v := range list {
		if tofuVersionRE.MatchString(v.String()) {
			out = append(out, v)
		}
	}
	return out, nil
}

// release resolves a version's tag and reads its release artifact.
func (t *tofuMirror) release(ctx context.Context, repo oci.ReadOnlyRepository, v versions.Version) (*tofuRelease, error) {
	tag := names.TagForVersion(v)
	desc, err := t.resolved.do(ctx, tag, t.s.opts.UpstreamTimeout, func(ctx context.Context) (ocispec.Descriptor, error) {
		return repo.Resolve(ctx, tag)
	})
	if err != nil {
		if oci.IsNotFound(err) {
			return nil, notFound("OpenTofu %s is not in this mirror", v)
		}
		return nil, t.s.src.upstream(err, "resolving the release's tag")
	}
	rel, err := t.releases.do(ctx, desc.Digest.String(), t.s.opts.UpstreamTimeout, func(ctx context.Context) (*tofuRelease, error) {
		return readTofuRelease(ctx, repo, desc, v)
	})
	if err != nil {
		return nil, t.s.src.upstream(err, "reading the release artifact")
	}
	return rel, nil
}

// readTofuRelease reads a release artifact and checks that it is what its
// tag says and that its file list agrees with its layers, so that a file
// is served only under the digest and size the release config records.
func readTofuRelease(ctx context.Context, repo oci.ReadOnlyRepository, desc ocispec.Descriptor, v versions.Version) (*tofuRelease, error) {
	cfg, layers, err := oci.ReadTofuRelease(ctx, repo, desc)
	if err != nil {
		return nil, err
	}
	if cfg.Version != v.String() {
		return nil, fmt.Errorf("%w: the artifact tagged %s holds OpenTofu %q", oci.ErrInvalidArtifact, names.TagForVersion(v), cfg.Version)
	}
	if len(cfg.Files) == 0 || len(cfg.Files) > maxTofuFiles {
		return nil, fmt.Errorf("%w: release %s lists %d files", oci.ErrInvalidArtifact, v, len(cfg.Files))
	}
	rel := &tofuRelease{version: cfg.Version, files: map[string]ocispec.Descriptor{}}
	for _, f := range cfg.Files {
		l, ok := layers[f.Name]
		switch {
		case !validTofuArtifact(f.Name):
			return nil, fmt.Errorf("%w: release %s lists the file name %q", oci.ErrInvalidArtifact, v, f.Name)
		case !ok:
			return nil, fmt.Errorf("%w: release %s lists %s but has no layer for it", oci.ErrInvalidArtifact, v, f.Name)
		case l.Digest != digest.NewDigestFromEncoded(digest.SHA256, f.SHA256) || l.Digest.Validate() != nil || l.Size != f.Size || l.Size < 0:
			return nil, fmt.Errorf("%w: release %s: the layer of %s (%s, %d bytes) is not the listed file (sha256 %s, %d bytes)",
				oci.ErrInvalidArtifact, v, f.Name, l.Digest, l.Size, f.SHA256, f.Size)
		}
		if _, dup := rel.files[f.Name]; dup {
			return nil, fmt.Errorf("%w: release %s lists %s twice", oci.ErrInvalidArtifact, v, f.Name)
		}
		rel.files[f.Name] = l
		rel.names = append(rel.names, f.Name)
	}
	return rel, nil
}

type tofuAPIVersion struct {
	ID    string   `json:"id"`
	Files []string `json:"files"`
}

// serveAPI answers api.json: every release, newest first.
func (t *tofuMirror) serveAPI(w http.ResponseWriter, r *http.Request) {
	if !allowRead(w, r) {
		return
	}
	if r.URL.EscapedPath() != TofuAPIPath {
		t.s.fail(w, r, notFound("no such document"))
		return
	}
	ctx := r.Context()
	doc := struct {
		Versions []tofuAPIVersion `json:"versions"`
	}{Versions: []tofuAPIVersion{}}
	repo, err := t.repository(ctx)
	var he *httpError
	if errors.As(err, &he) && he.status == http.StatusNotFound {
		t.s.log.LogAttrs(ctx, slog.LevelWarn, "the OpenTofu release repository does not exist", slog.String("repository", t.name))
		writeJSON(w, r, doc)
		return
	}
	if err != nil {
		t.s.fail(w, r, err)
		return
	}
	list, err := t.versions(ctx, repo)
	if err != nil {
		t.s.fail(w, r, err)
		return
	}
	out := make([]*tofuRelease, len(list))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, v := range list {
		g.Go(func() error {
			rel, err := t.release(gctx, repo, v)
			var he *httpError
			switch {
			case err == nil:
				out[i] = rel
			case errors.As(err, &he) && he.status == http.StatusNotFound:
				// tag removed since listing
			case errors.Is(err, oci.ErrInvalidArtifact):
				t.s.log.LogAttrs(ctx, slog.LevelWarn, "OpenTofu version left out: not a valid release artifact",
					slog.String("version", v.String()), slog.Any("error", err))
			default:
				return err
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.s.fail(w, r, err)
		return
	}
	for _, rel := range out {
		if rel != nil {
			doc.Versions = append(doc.Versions, tofuAPIVersion{ID: rel.version, Files: rel.names})
		}
	}
	sort.SliceStable(doc.Versions, func(i, j int) bool {
		return compareTofuVersions(doc.Versions[i].ID, doc.Versions[j].ID) > 0
	})
	writeJSON(w, r, doc)
}

// compareTofuVersions orders versions as TofuDL does: by major, minor,
// patch, then stable > rc > beta > alpha, then the pre-release number
// (so 1.10.0-rc10 is newer than 1.10.0-rc2). Both must match tofuVersionRE.
func compareTofuVersions(a, b string) int {
	pa, pb := tofuVersionParts(a), tofuVersionParts(b)
	for i := range pa {
		if pa[i] != pb[i] {
			if pa[i] < pb[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

func tofuVersionParts(s string) [5]int {
	m := tofuVersionRE.FindStringSubmatch(s)
	var p [5]int
	if m == nil {
		return p
	}
	for i := 0; i < 3; i++ {
		p[i], _ = strconv.Atoi(m[i+1])
	}
	p[3] = map[string]int{"": 0, "rc": -1, "beta": -2, "alpha": -3}[m[5]]
	if m[6] != "" {
		p[4], _ = strconv.Atoi(m[6])
	}
	return p
}

// serveDownload streams one release file, verifying its digest as it
// streams (a mismatch aborts the response).
func (t *tofuMirror) serveDownload(w http.ResponseWriter, r *http.Request) {
	s := t.s
	if !allowRead(w, r) {
		return
	}
	req, err := ParseTofuDownloadPath(strings.TrimPrefix(r.URL.EscapedPath(), TofuDownloadPrefix))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	repo, err := t.repository(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	rel, err := t.release(ctx, repo, req.Version)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	desc, ok := rel.files[req.Artifact]
	if !ok {
		s.fail(w, r, notFound("OpenTofu %s has no file %s", req.Version, req.Artifact))
		return
	}
	fw := &fileTypeWriter{ResponseWriter: w, ctype: releaseFileType(req.Artifact)}
	s.streamZip(fw, r, &release{repo: repo, repoName: t.name}, desc, req.Artifact)
	if r.Method == http.MethodHead {
		fw.fix()
	}
}

// releaseFileType is the Content-Type of a release file.
func releaseFileType(name string) string {
	switch {
	case strings.HasSuffix(name, ".tar.gz"), strings.HasSuffix(name, ".tgz"):
		return "application/gzip"
	case strings.HasSuffix(name, ".zip"):
		return "application/zip"
	case strings.HasSuffix(name, "SHA256SUMS"), strings.HasSuffix(name, ".txt"):
		return "text/plain; charset=utf-8"
	default:
		return "application/octet-stream"
	}
}

// fileTypeWriter gives a streamed release file its own Content-Type and
// cache policy (the archive streamer labels everything a zip, pinned by
// digest) just before the headers go out; error answers keep theirs.
type fileTypeWriter struct {
	http.ResponseWriter
	ctype string
	done  bool
}

func (f *fileTypeWriter) fix() {
	if f.done {
		return
	}
	f.done = true
	h := f.Header()
	if h.Get("Content-Type") == "application/zip" {
		h.Set("Content-Type", f.ctype)
		// Download URLs name a version, not a digest: a re-pushed
		// release must not be served stale from HTTP caches.
		if h.Get("Cache-Control") != "private, no-store" {
			h.Set("Cache-Control", "no-cache")
		}
	}
}

func (f *fileTypeWriter) WriteHeader(code int) {
	f.fix()
	f.ResponseWriter.WriteHeader(code)
}

func (f *fileTypeWriter) Write(b []byte) (int, error) {
	f.fix()
	return f.ResponseWriter.Write(b)
}

func (f *fileTypeWriter) Unwrap() http.ResponseWriter { return f.ResponseWriter }
