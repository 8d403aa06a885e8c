package proxy

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/oci-tofu/oci-tofu/protocol/source"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
)

// pulledTofu is the tofuSource with pull-through: the releases the
// registry holds (heldTofu), and those the TofuDL origin offers besides,
// fetched, verified and stored by the pull-through engine.
type pulledTofu struct {
	*heldTofu
	engine *pullthrough.Engine
}

// apiDoc is api.json: the releases the registry holds and those the
// origin offers besides (with the files pull-through would take), newest
// first. With the origin failing: what the registry holds, logged and
// counted.
func (t *pulledTofu) apiDoc(ctx context.Context) (any, time.Time, error) {
	if t.factsRule() { // pulled_facts_tofu.go
		return t.apiDocUnderFacts(ctx)
	}
	d, at, err := t.heldTofu.apiDoc(ctx)
	if err != nil {
		return nil, at, err
	}
	doc := d.(wire.TofuAPI)
	have := map[string]bool{}
	for _, v := range doc.Versions {
		have[v.ID] = true
	}
	for _, sv := range t.engine.Recent(t.repo.Name()) {
		if !have[sv.Version.String()] && len(t.allowedTofu([]names.Version{sv.Version})) == 1 { // pulled_policy.go
			doc.Versions = append(doc.Versions, wire.TofuVersion{ID: sv.Version.String(), Files: sv.Files})
			have[sv.Version.String()] = true
		}
	}
	origin := t.engine.TofuOrigin()
	l, fetched, oerr := t.engine.TofuOffered(ctx)
	if oerr != nil {
		if len(doc.Versions) == 0 {
			return nil, at, oerr
		}
		t.engine.DegradedListing("tofu", origin.API.Redacted(), oerr)
		sortTofuVersions(doc.Versions)
		return doc, at, nil
	}
	for _, v := range t.allowedTofu(l.Versions) { // pulled_policy.go
		if have[v.String()] {
			continue
		}
		doc.Versions = append(doc.Versions, wire.TofuVersion{ID: v.String(), Files: origin.WantedFiles(v, l.Files[v.String()])})
	}
	sortTofuVersions(doc.Versions)
	return doc, earliestNonZero(at, fetched), nil
}

// serveFile streams a release file: held by the registry, or, for a
// release it does not hold, from the pull in flight, from the registry
// once stored, or from the origin, SHA256SUMS and its signature first (a
// client asks for them before the archive), an archive as it downloads.
func (t *pulledTofu) serveFile(w http.ResponseWriter, r *http.Request, req TofuDownloadRequest) {
	if t.factsRule() { // pulled_facts_tofu.go
		t.serveFileUnderFacts(w, r, req)
		return
	}
	if err := t.tofuRefusal(req.Version); err != nil { // pulled_policy.go
		t.fail(w, r, err)
		return
	}
	rel, err := t.repo.TofuRelease(r.Context(), req.Version)
	if err == nil || !source.Absent(err) {
		t.serveHeld(w, r, req, rel, err)
		return
	}
	t.serveWhilePulling(w, r, func() bool { return t.servePulledFile(w, r, req) })
}

func (t *pulledTofu) servePulledFile(w http.ResponseWriter, r *http.Request, req TofuDownloadRequest) bool {
	key := pullthrough.TofuPullKey(t.repo.Name(), req.Version)
	p, _, _ := t.engine.InflightFile(key, "") // no file asked: no error
	var rel *ingest.TofuOriginRelease
	if p != nil {
		rel = p.Tofu()
	} else if res, ok := t.engine.Completed(r.Context(), key); ok && t.storedFiles(r, req, key, &res) {
		desc, ok := res.Files[req.Artifact]
		if !ok {
			t.fail(w, r, source.NotFoundf("OpenTofu %s has no file %s", req.Version, req.Artifact))
			return true
		}
		t.serveBlob(w, r, t.repo, desc, blobFile{name: req.Artifact, contentType: releaseFileType(req.Artifact)})
		return true
	} else {
		var err error
		if rel, err = t.engine.TofuRelease(r.Context(), req.Version); err != nil {
			t.fail(w, r, err)
			return true
		}
	}
	if name := req.Artifact; name == rel.SumsName() || name == rel.SignatureName() {
		body := rel.SHA256SUMS
		if name != rel.SumsName() {
			body = rel.Signature
		}
		t.writeSmallFile(w, r, body, releaseFileType(name))
		return true
	}
	if !rel.Has(req.Artifact) {
		t.fail(w, r, source.NotFoundf("OpenTofu %s has no file %s (or pull-through does not take it)", req.Version, req.Artifact))
		return true
	}
	_, g, err := t.engine.StartTofu(r.Context(), req.Version, rel, req.Artifact, true)
	switch {
	case errors.Is(err, pullthrough.ErrFinished):
		return false
	case err != nil:
		t.fail(w, r, err)
		return true
	}
	t.streamPulled(w, r, g, blobFile{name: req.Artifact, contentType: releaseFileType(req.Artifact)})
	return true
}

// storedFiles fills in the files of a release another replica recorded
// as stored (the shared cache is not trusted): the release is read by
// its digest from the registry and must be the version asked for. False
// when it cannot be: the release is then looked for as if not recorded.
func (t *pulledTofu) storedFiles(r *http.Request, req TofuDownloadRequest, key string, res *pullthrough.Stored) bool {
	if !res.Shared {
		return true
	}
	rel, err := t.repo.TofuReleaseAt(r.Context(), req.Version, res.Root.Digest)
	if err != nil {
		t.log.Warn("pull-through: the shared cache names an OpenTofu release the registry does not confirm",
			"version", req.Version.String(), "digest", res.Root.Digest.String(), "error", err)
		t.engine.Distrust(key)
		return false
	}
	res.Files = rel.Files
	return true
}
