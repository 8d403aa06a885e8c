package proxy

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
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

// tofuSource answers the TofuDL mirror: heldTofu from the registry's
// TofuDL repository; with pull-through, pulledTofu wraps it with the
// TofuDL origin's releases. Handlers ask it and do not know which
// answered.
type tofuSource interface {
	// apiDoc is api.json: every release, newest first.
	apiDoc(ctx context.Context) (any, time.Time, error)
	// serveFile streams one release file.
	serveFile(w http.ResponseWriter, r *http.Request, req TofuDownloadRequest)
}

// tofuHandlers serve OpenTofu releases (oci-tofu push tofu) from one
// repository as a TofuDL mirror.
type tofuHandlers struct {
	*responder
	source tofuSource
}

// heldTofu is the tofuSource of the releases the registry holds.
type heldTofu struct {
	*responder
	repo *store.Repo
	// unattested: the attestation rule (admission.go) is not applied. So
	// with pull-through, which would list and pull from the origin the
	// releases it refuses (docs/proxy.md). The policy file (policy.go),
	// which needs no content, is applied to the origin's releases too
	// (pulled_policy.go); its min_age and signers, which need a stored
	// release, are applied here, and with them pull-through hands out
	// nothing from the origin (pulled_facts_tofu.go).
	unattested bool
}

// mountTofu adds the TofuDL mirror for the releases in ref.
func (s *Server) mountTofu(ref oci.Reference) {
	held := &heldTofu{responder: s.out, repo: s.store.Repo(ref), unattested: s.pull.Tofu()}
	t := &tofuHandlers{responder: s.out, source: held}
	if s.pull.Tofu() {
		t.source = &pulledTofu{heldTofu: held, engine: s.pull}
	}
	s.Mount("", TofuAPIPath, "tofu_api", s.Authenticate(http.HandlerFunc(t.serveAPI)))
	s.Mount("", TofuDownloadPrefix, "tofu_download", s.Authenticate(http.HandlerFunc(t.serveDownload)))
}

// serveAPI answers api.json: every release, newest first.
func (t *tofuHandlers) serveAPI(w http.ResponseWriter, r *http.Request) {
	if !allowRead(w, r) {
		return
	}
	if r.URL.EscapedPath() != TofuAPIPath {
		t.fail(w, r, notFound("no such document"))
		return
	}
	t.serveDoc(w, r, TofuAPIPath, t.source.apiDoc)
}

// serveDownload streams one release file, verifying its digest as it
// streams (a mismatch aborts the response).
func (t *tofuHandlers) serveDownload(w http.ResponseWriter, r *http.Request) {
	req, ok := readRequest(t.responder, w, r, TofuDownloadPrefix, ParseTofuDownloadPath)
	if !ok {
		return
	}
	t.source.serveFile(w, r, req)
}

// apiDoc lists the tags that name OpenTofu versions as TofuDL writes them
// (1.9.0, 1.10.0-beta1) and hold valid release artifacts the rules admit;
// others are left out and logged. A repository that does not exist (yet)
// has none.
func (t *heldTofu) apiDoc(ctx context.Context) (any, time.Time, error) {
	doc := wire.TofuAPI{Versions: []wire.TofuVersion{}}
	l, err := t.repo.Versions(ctx)
	if store.FailureOf(err) == oci.FailureNotFound {
		t.log.Warn("the OpenTofu release repository does not exist", "repository", t.repo.Name())
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
	vs = t.policyAllowed(policy.KindTofu, policy.TofuAddress, vs) // policy.go
	out := make([]*store.TofuRelease, len(vs))
	err = t.store.EachVersion(ctx, vs, func(ctx context.Context, i int, v names.Version) error {
		rel, err := t.repo.TofuRelease(ctx, v)
		if err != nil && store.FailureOf(err) == oci.FailureInvalid {
			t.log.Warn("OpenTofu version left out: not a valid release artifact", "version", v.String(), "error", err)
		}
		refused := false
		if err == nil && !t.unattested {
			refused, err = t.refusedInListing(ctx, t.repo, store.KindTofu, "OpenTofu", v, rel.Digest) // admission.go
		}
		if err == nil && !refused {
			var warn string // policy_facts.go
			warn, err = t.factsWarning(ctx, policy.KindTofu, policy.TofuAddress, v, releaseRoot{repo: t.repo, subject: rel.Digest})
			refused = warn != ""
		}
		if err == nil && !refused {
			out[i] = rel // each index by one goroutine
		}
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
	t.seen.tofuListed(ids)
	return doc, l.At, nil
}

// serveFile streams a file of a release the registry holds.
func (t *heldTofu) serveFile(w http.ResponseWriter, r *http.Request, req TofuDownloadRequest) {
	rel, err := t.release(r.Context(), req.Version)
	t.serveHeld(w, r, req, rel, err)
}

// release reads the release version v's tag names, when the policy and
// the attestation rule admit it (404 naming why otherwise).
func (t *heldTofu) release(ctx context.Context, v names.Version) (*store.TofuRelease, error) {
	if err := t.policyDenial(policy.KindTofu, policy.TofuAddress, "OpenTofu", v); err != nil { // policy.go
		return nil, err
	}
	rel, err := t.repo.TofuRelease(ctx, v)
	if err != nil {
		return rel, err
	}
	if err := t.factsDenial(ctx, policy.KindTofu, policy.TofuAddress, "OpenTofu", v, releaseRoot{repo: t.repo, subject: rel.Digest}); err != nil { // policy_facts.go
		return nil, err
	}
	if t.unattested {
		return rel, nil
	}
	return rel, admitted(ctx, t.repo, store.KindTofu, "OpenTofu", v, rel.Digest) // admission.go
}

// serveHeld streams a file of rel, as the registry answered for it.
func (t *heldTofu) serveHeld(w http.ResponseWriter, r *http.Request, req TofuDownloadRequest, rel *store.TofuRelease, err error) {
	if err != nil {
		t.fail(w, r, missing(err, "OpenTofu release repository", "OpenTofu %s is not in this mirror", req.Version))
		return
	}
	desc, ok := rel.Files[req.Artifact]
	if !ok {
		t.fail(w, r, notFound("OpenTofu %s has no file %s", req.Version, req.Artifact))
		return
	}
	// Download URLs name a version, not a digest: not pinned.
	t.serveBlob(w, r, t.repo, desc, blobFile{name: req.Artifact, contentType: releaseFileType(req.Artifact)})
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
