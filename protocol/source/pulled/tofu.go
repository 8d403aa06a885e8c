package pulled

import (
	"context"
	"errors"
	"log/slog"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// tofuAddress is the policy address of OpenTofu releases.
const tofuAddress = "tofu"

// Tofu is the OpenTofu releases the registry holds (Held, read from
// Repo) and those the TofuDL origin offers besides.
type Tofu struct {
	Held   source.Tofu
	Repo   *store.Repo
	Engine TofuEngine
	Rules  source.Rules
	Log    *slog.Logger
}

var _ source.Tofu = (*Tofu)(nil)

// factsRule is the name of the tofu rule that reads facts, if one does.
func (t *Tofu) factsRule() (string, bool) { return t.Rules.FactsRule(names.KindTofu, tofuAddress) }

// TofuVersions lists what the registry holds, what pull-through stored
// lately and what the origin offers besides. With the origin failing:
// what the registry holds (logged and counted), or the origin's error
// when it holds nothing. Under a facts rule: what the registry holds,
// the origin's newest releases sighted.
func (t *Tofu) TofuVersions(ctx context.Context) (source.Listing, error) {
	l, err := t.Held.TofuVersions(ctx)
	if err != nil {
		return l, err
	}
	if _, ok := t.factsRule(); ok {
		t.sightOrigin(ctx)
		return l, nil
	}
	have := map[string]bool{}
	for _, e := range l.Versions {
		have[e.Version.String()] = true
	}
	for _, sv := range t.Engine.Recent(t.Repo.Name()) {
		if !have[sv.Version.String()] {
			l.Versions = append(l.Versions, source.Listed{Version: sv.Version, Stored: true})
			have[sv.Version.String()] = true
		}
	}
	offered, fetched, oerr := t.Engine.TofuOffered(ctx)
	if oerr != nil {
		if len(l.Versions) == 0 {
			return l, oerr
		}
		t.Engine.DegradedListing(names.KindTofu, t.Engine.TofuOrigin().API.Redacted(), oerr)
		return l, nil
	}
	for _, v := range offered.Versions {
		if !have[v.String()] {
			l.Versions = append(l.Versions, source.Listed{Version: v})
		}
	}
	l.At = source.Earliest(l.At, fetched)
	return l, nil
}

// TofuRelease is the release the registry holds, or the one pull-through
// stored lately, or the origin's (with the files pull-through would
// take); under a facts rule, the registry's alone.
func (t *Tofu) TofuRelease(ctx context.Context, v names.Version) (*source.TofuEntry, error) {
	rel, err := t.Held.TofuRelease(ctx, v)
	if !source.IsNotHeld(err) {
		return rel, err
	}
	if _, ok := t.factsRule(); ok {
		return nil, err
	}
	for _, sv := range t.Engine.Recent(t.Repo.Name()) {
		if sv.Version.Same(v) {
			return &source.TofuEntry{Version: v, Files: sv.Files}, nil
		}
	}
	offered, _, oerr := t.Engine.TofuOffered(ctx)
	if oerr != nil {
		return nil, oerr
	}
	for _, ov := range offered.Versions {
		if ov.Same(v) {
			return &source.TofuEntry{Version: v, Files: t.Engine.TofuOrigin().WantedFiles(v, offered.Files[v.String()])}, nil
		}
	}
	return nil, err
}

// OpenTofuFile is a release file: held by the registry, or, for a release
// it does not hold, from the pull in flight, from the registry once
// stored, or from the origin, SHA256SUMS and its signature at once (a
// client asks for them before the archive), an archive as it downloads.
// Under a facts rule, a release the registry does not hold is not found,
// its pull started.
func (t *Tofu) OpenTofuFile(ctx context.Context, v names.Version, name string) (*source.Blob, error) {
	_, err := t.Repo.StoredTofu(ctx, v)
	if err == nil || !source.Absent(err) {
		return t.Held.OpenTofuFile(ctx, v, name)
	}
	if rule, ok := t.factsRule(); ok {
		go t.sight(v)
		return nil, BeingFetched("OpenTofu", v, rule)
	}
	for range 2 {
		blob, err := t.pulledFile(ctx, v, name)
		if !errors.Is(err, pullthrough.ErrFinished) {
			return blob, err
		}
	}
	return nil, &source.Busy{Msg: "the release is being stored; try again"}
}

// pulledFile is the file from the pull in flight, the release it stored,
// or the origin; ErrFinished when a pull finished under it.
func (t *Tofu) pulledFile(ctx context.Context, v names.Version, name string) (*source.Blob, error) {
	key := pullthrough.TofuPullKey(t.Repo.Name(), v)
	p, _, _ := t.Engine.InflightFile(key, "") // no file asked: no error
	var rel *ingest.TofuOriginRelease
	if p != nil {
		rel = p.Tofu()
	} else if res, ok := t.Engine.Completed(ctx, key); ok && t.storedFiles(ctx, v, key, &res) {
		desc, ok := res.Files[name]
		if !ok {
			return nil, source.NotFoundf("OpenTofu %s has no file %s", v, name)
		}
		return &source.Blob{Name: name, ContentType: source.FileType(name), Repo: t.Repo, Layer: desc}, nil
	} else {
		var err error
		if rel, err = t.Engine.TofuRelease(ctx, v); err != nil {
			return nil, err
		}
	}
	if name == rel.SumsName() {
		return &source.Blob{Name: name, ContentType: source.FileType(name), Pinned: true, Data: rel.SHA256SUMS}, nil
	}
	if name == rel.SignatureName() {
		return &source.Blob{Name: name, ContentType: source.FileType(name), Pinned: true, Data: rel.Signature}, nil
	}
	if !rel.Has(name) {
		return nil, source.NotFoundf("OpenTofu %s has no file %s (or pull-through does not take it)", v, name)
	}
	_, g, err := t.Engine.StartTofu(ctx, v, rel, name, true)
	if err != nil {
		return nil, err
	}
	return &source.Blob{Name: name, ContentType: source.FileType(name), Pulling: g}, nil
}

// storedFiles fills in the files of a release another replica recorded
// as stored (the shared cache is not trusted): the release is read by
// its digest from the registry and must be the version asked for. False
// when it cannot be: the release is then looked for as if not recorded.
func (t *Tofu) storedFiles(ctx context.Context, v names.Version, key string, res *pullthrough.Stored) bool {
	if !res.Shared {
		return true
	}
	rel, err := t.Repo.StoredTofuAt(ctx, v, res.Root.Digest)
	if err != nil {
		t.Log.Warn("pull-through: the shared cache names an OpenTofu release the registry does not confirm",
			"version", v.String(), "digest", res.Root.Digest.String(), "error", err)
		t.Engine.Distrust(key)
		return false
	}
	res.Files = rel.Files
	return true
}

// sightOrigin starts the background pulls of the newest releases the
// origin offers that the registry does not hold (a repository that does
// not exist yet holds none) and the policy's version rules allow.
func (t *Tofu) sightOrigin(ctx context.Context) {
	heldVersions, err := t.Repo.Versions(ctx)
	if err != nil && store.FailureOf(err) != oci.FailureNotFound {
		return
	}
	offered, _, err := t.Engine.TofuOffered(ctx)
	if err != nil {
		t.Engine.DegradedListing(names.KindTofu, t.Engine.TofuOrigin().API.Redacted(), err)
		return
	}
	for _, v := range FirstSight(heldVersions.Versions, t.Rules.Allowed(names.KindTofu, tofuAddress, offered.Versions)) {
		go t.sight(v)
	}
}

// sight pulls release v from the origin into the registry, as a first
// request would, with nobody waiting for it.
func (t *Tofu) sight(v names.Version) {
	ctx, cancel := context.WithTimeout(context.Background(), FirstSightTimeout)
	defer cancel()
	rel, err := t.Engine.TofuRelease(ctx, v)
	if err == nil {
		_, _, err = t.Engine.StartTofu(ctx, v, rel, "", false)
	}
	if err != nil && !errors.Is(err, pullthrough.ErrFinished) {
		t.Log.Debug("pull-through: the first sight of an OpenTofu release under a min_age or signers rule did not start its pull", "version", v.String(), "error", err)
	}
}
