package proxy

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// TofuDL pull-through under a tofu rule with min_age or signers, as
// pulled_facts.go does for providers: only a stored release has what such
// a rule reads, so api.json and the release files are the registry's, the
// rule applied (heldTofu), and nothing is handed out from the origin.
// Listing api.json pulls in the background the newest releases the
// origin offers that the registry does not hold and the rule's versions
// allow (the first sight, which starts their min_age clock when the
// proxy attests what it stores); a file of a release not held yet is 404
// and starts its pull.

// factsRule reports whether the policy's tofu rule reads facts.
func (t *pulledTofu) factsRule() bool {
	return t.opts.Policy.Current().Needs(policy.KindTofu, policy.TofuAddress).Any()
}

// apiDocUnderFacts is api.json as the registry holds it, the rule's
// facts applied; the origin's newest releases are sighted.
func (t *pulledTofu) apiDocUnderFacts(ctx context.Context) (any, time.Time, error) {
	d, at, err := t.heldTofu.apiDoc(ctx)
	if err != nil {
		return nil, at, err
	}
	t.sightOrigin(ctx)
	return d, at, nil
}

// sightOrigin starts the background pulls of the newest releases the
// origin offers that the registry does not hold (a repository that does
// not exist yet holds none) and the policy's version rules allow.
func (t *pulledTofu) sightOrigin(ctx context.Context) {
	held, err := t.repo.Versions(ctx)
	if err != nil && store.FailureOf(err) != oci.FailureNotFound {
		return
	}
	l, _, err := t.engine.TofuOffered(ctx)
	if err != nil {
		t.engine.DegradedListing("tofu", t.engine.TofuOrigin().API.Redacted(), err)
		return
	}
	for _, v := range firstSight(held.Versions, t.allowedTofu(l.Versions)) { // pulled_facts.go, pulled_policy.go
		go t.sight(v)
	}
}

// sight pulls release v from the origin into the registry, as a first
// request would, with nobody waiting for it.
func (t *pulledTofu) sight(v names.Version) {
	ctx, cancel := context.WithTimeout(context.Background(), firstSightTimeout)
	defer cancel()
	rel, err := t.engine.TofuRelease(ctx, v)
	if err == nil {
		_, _, err = t.engine.StartTofu(ctx, v, rel, "", false)
	}
	if err != nil && !errors.Is(err, pullthrough.ErrFinished) {
		t.log.Debug("pull-through: the first sight of an OpenTofu release under a min_age or signers rule did not start its pull", "version", v.String(), "error", err)
	}
}

// serveFileUnderFacts serves a file of a release the registry holds, the
// rule applied; of one it does not hold, 404, its pull started.
func (t *pulledTofu) serveFileUnderFacts(w http.ResponseWriter, r *http.Request, req TofuDownloadRequest) {
	if err := t.tofuRefusal(req.Version); err != nil { // pulled_policy.go: nothing of a denied version is fetched
		t.fail(w, r, err)
		return
	}
	if _, err := t.repo.TofuRelease(r.Context(), req.Version); err != nil && notHeld(err) {
		go t.sight(req.Version)
		t.fail(w, r, beingFetched("OpenTofu", req.Version, t.opts.Policy.Current().Needs(policy.KindTofu, policy.TofuAddress).Rule)) // pulled_facts.go
		return
	}
	t.heldTofu.serveFile(w, r, req)
}
