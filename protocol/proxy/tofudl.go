package proxy

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// TofuDL mirror paths: the API document and the download URL template's
// base (https://HOST/tofu/download/v{{ .Version }}/{{ .Artifact }}).
const (
	TofuAPIPath        = "/tofu/api.json"
	TofuDownloadPrefix = "/tofu/download/"
)

// tofuMirror serves OpenTofu releases (oci-tofu push tofu) from one
// repository as a TofuDL mirror.
type tofuMirror struct {
	s    *Server
	repo *store.Repo
}

// mountTofu adds the TofuDL mirror for the releases in ref.
func (s *Server) mountTofu(ref oci.Reference) {
	t := &tofuMirror{s: s, repo: s.store.Repo(ref)}
	s.Mount("", TofuAPIPath, "tofu_api", s.Authenticate(http.HandlerFunc(t.serveAPI)))
	s.Mount("", TofuDownloadPrefix, "tofu_download", s.Authenticate(http.HandlerFunc(t.serveDownload)))
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
	build := t.apiDoc
	if t.s.pull.tofuEnabled() {
		build = t.pullAPIDoc // pullthrough_tofu.go
	}
	t.s.serveDoc(w, r, TofuAPIPath, build)
}

// apiDoc lists the tags that name OpenTofu versions as TofuDL writes them
// (1.9.0, 1.10.0-beta1) and hold valid release artifacts; others are left
// out and logged. A repository that does not exist (yet) has none.
func (t *tofuMirror) apiDoc(ctx context.Context) (any, time.Time, error) {
	doc := wire.TofuAPI{Versions: []wire.TofuVersion{}}
	l, err := t.repo.Versions(ctx)
	if store.FailureOf(err) == oci.FailureNotFound {
		t.s.log.Warn("the OpenTofu release repository does not exist", "repository", t.repo.Name())
		return doc, time.Now(), nil
	}
	if err != nil {
		return nil, l.At, err
	}
	var vs names.VersionList
	for _, v := range l.Versions {
		if _, bad := l.Unresolvable[v.String()]; !bad && names.IsTofuVersion(v.String()) {
			vs = append(vs, v)
		}
	}
	out := make([]*store.TofuRelease, len(vs))
	err = t.s.store.EachVersion(ctx, vs, func(ctx context.Context, i int, v names.Version) error {
		rel, err := t.repo.TofuRelease(ctx, v)
		if err != nil && store.FailureOf(err) == oci.FailureInvalid {
			t.s.log.Warn("OpenTofu version left out: not a valid release artifact", "version", v.String(), "error", err)
		}
		out[i] = rel
		return keepFatal(err)
	})
	if err != nil {
		return nil, l.At, err
	}
	for _, rel := range out {
		if rel != nil {
			doc.Versions = append(doc.Versions, wire.TofuVersion{ID: rel.Version, Files: rel.Names})
		}
	}
	sortTofuVersions(doc.Versions)
	ids := make([]string, len(doc.Versions))
	for i, v := range doc.Versions {
		ids[i] = v.ID
	}
	t.s.seen.tofuListed(ids)
	return doc, l.At, nil
}

// serveDownload streams one release file, verifying its digest as it
// streams (a mismatch aborts the response).
func (t *tofuMirror) serveDownload(w http.ResponseWriter, r *http.Request) {
	s := t.s
	req, ok := readRequest(s, w, r, TofuDownloadPrefix, ParseTofuDownloadPath)
	if !ok {
		return
	}
	rel, err := t.repo.TofuRelease(r.Context(), req.Version)
	if err != nil && s.pull.tofuEnabled() && notHeld(err) {
		t.servePulledTofu(w, r, req) // pullthrough_tofu.go
		return
	}
	if err != nil {
		s.fail(w, r, missing(err, "OpenTofu release repository", "OpenTofu %s is not in this mirror", req.Version))
		return
	}
	desc, ok := rel.Files[req.Artifact]
	if !ok {
		s.fail(w, r, notFound("OpenTofu %s has no file %s", req.Version, req.Artifact))
		return
	}
	// Download URLs name a version, not a digest: not pinned.
	s.serveBlob(w, r, t.repo, desc, blobFile{name: req.Artifact, contentType: releaseFileType(req.Artifact)})
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

// sortTofuVersions orders api.json's versions newest first.
func sortTofuVersions(vs []wire.TofuVersion) {
	sort.SliceStable(vs, func(i, j int) bool { return names.CompareTofuVersions(vs[i].ID, vs[j].ID) > 0 })
}
