package pulled

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// OpenPulledFile is a file a pull URL names: from the pull in flight,
// from the registry once the release is stored, or by starting the pull.
// The SHA256SUMS digest the URL pins must still be the origin's (or the
// stored release's).
func (h *Providers) OpenPulledFile(ctx context.Context, f source.PulledFile) (*source.Blob, error) {
	t, ref, err := h.targetOf(ctx, f)
	if err != nil {
		return nil, err
	}
	key := pullthrough.ProviderPullKey(ref.Name(), f.Version, f.Sums)
	for range 2 {
		blob, err := h.pulledFile(ctx, t, f, key)
		if !errors.Is(err, pullthrough.ErrFinished) {
			return blob, err
		}
	}
	return nil, &source.Busy{Msg: "the release is being stored; try again"}
}

// targetOf is the pull-through target a pull URL names, checked as when
// the metadata named it, and the repository it is stored in.
func (h *Providers) targetOf(ctx context.Context, f source.PulledFile) (pullthrough.Target, oci.Reference, error) {
	t, ok := h.Engine.TargetOf(f.Via, f.Provider, f.RegistryHost)
	if !ok {
		return t, oci.Reference{}, source.NotFoundf("provider %s is not pulled through from any allowed origin", f.Provider)
	}
	if !h.pulls(t.Served) { // no mapping of this proxy's stores it (merged.Providers asks the one that does)
		return t, oci.Reference{}, source.NotFoundf("provider %s is not served by this proxy", t.Served)
	}
	d, err := h.Engine.ProviderDestination(t)
	if err != nil {
		return t, oci.Reference{}, source.Missing(err, "provider "+t.Served.String(), "provider %s is not served by this proxy", t.Served)
	}
	if err := h.mayJoin(ctx, t, d); err != nil {
		if errors.Is(err, errPushed) {
			err = source.NotFoundf("%s", pullthrough.ErrHeldAsPushed("provider "+t.Served.String()))
		}
		return t, oci.Reference{}, err
	}
	return t, d.Ref, nil
}

// fileName is the release file name f names.
func fileName(f source.PulledFile, p names.Provider) string {
	switch f.File {
	case source.FileSHA256SUMS:
		return names.ProviderSHA256SUMSName(p.Type, f.Version.String())
	case source.FileSignature:
		return names.ProviderSignatureName(p.Type, f.Version.String())
	}
	return names.ProviderZipName(p.Type, f.Version.String(), f.Platform)
}

// pulledFile tries, in order: the pull in flight, the release it stored,
// the release the registry holds, and the origin. ErrFinished when a pull
// finished under it (try again).
func (h *Providers) pulledFile(ctx context.Context, t pullthrough.Target, f source.PulledFile, key string) (*source.Blob, error) {
	name := fileName(f, t.Served)
	demand := ""
	if f.File == source.FilePackage {
		demand = name
	}
	p, g, err := h.Engine.InflightFile(key, demand)
	switch {
	case err != nil:
		return nil, err
	case p != nil:
		return originFile(p.Provider(), g, f, name), nil
	}
	if blob, ok, err := h.storedFile(ctx, t, f, key); ok {
		return blob, err
	}
	meta, err := h.Engine.ProviderRelease(ctx, t, f.Version)
	if err != nil {
		return nil, err
	}
	if meta.SumsDigest() != f.Sums {
		return nil, source.NotFoundf("the origin's release of %s %s changed since this URL was handed out: ask for the metadata again", t.Origin, f.Version)
	}
	if f.File != source.FilePackage {
		return originFile(meta, nil, f, name), nil
	}
	if !meta.Has(f.Platform) {
		return nil, source.NotFoundf("provider %s %s has no package for %s", t.Served, f.Version, f.Platform)
	}
	_, g, err = h.Engine.StartProvider(ctx, t, f.Version, meta, name, true)
	if err != nil {
		return nil, err
	}
	return originFile(meta, g, f, name), nil
}

// storedFile is the file from the release a pull stored, or the registry
// holds; ok is false when the registry does not hold the version.
func (h *Providers) storedFile(ctx context.Context, t pullthrough.Target, f source.PulledFile, key string) (blob *source.Blob, ok bool, err error) {
	if res, done := h.Engine.Completed(ctx, key); done {
		root, err := h.Held.ResolveProviderAt(ctx, t.Served, f.Version, res.Root.Digest)
		if err == nil && res.Shared {
			err = h.checkSums(ctx, root, f.Sums)
		}
		switch {
		case err == nil:
			blob, err := h.heldFile(ctx, root, f)
			return blob, true, err
		case !res.Shared:
			return nil, true, err
		}
		h.Log.Warn("pull-through: the shared cache names a release the registry does not confirm; set aside",
			"provider", t.Served.String(), "version", f.Version.String(), "index", res.Root.Digest.String(), "error", err)
		h.Engine.Distrust(key)
	}
	root, err := h.Held.ResolveProvider(ctx, t.Served, f.Version, names.ViaMirror)
	switch {
	case err != nil && source.Absent(err):
		return nil, false, nil
	case err != nil:
		return nil, true, err
	}
	if h.checkSums(ctx, root, f.Sums) != nil {
		return nil, true, source.NotFoundf("provider %s %s is now held with another SHA256SUMS than this URL names: ask for the metadata again", t.Served, f.Version)
	}
	blob, err = h.heldFile(ctx, root, f)
	return blob, true, err
}

// checkSums checks that a stored release carries the publisher's
// SHA256SUMS with digest sums.
func (h *Providers) checkSums(ctx context.Context, root *source.ProviderRoot, sums digest.Digest) error {
	rel, err := h.Held.ReadProvider(ctx, root, source.NeedChecksums)
	if err != nil {
		return err
	}
	if rel.Checksums == nil || digest.FromBytes(rel.Checksums.Data) != sums {
		return fmt.Errorf("the release at %s does not carry the SHA256SUMS %s", root.Root.Digest, sums)
	}
	return nil
}

// heldFile is a file of a stored release, which the gate judges (From).
func (h *Providers) heldFile(ctx context.Context, root *source.ProviderRoot, f source.PulledFile) (*source.Blob, error) {
	var blob *source.Blob
	if f.File == source.FilePackage {
		b, err := h.Held.OpenProviderPackage(ctx, root, f.Platform)
		if err != nil {
			return nil, err
		}
		blob = b
	} else {
		rel, err := h.Held.ReadProvider(ctx, root, source.NeedChecksums)
		if err != nil {
			return nil, err
		}
		if rel.Checksums == nil {
			return nil, cmp.Or[error](rel.ChecksumsErr, &source.Conflict{Msg: fmt.Sprintf("provider %s %s has no publisher signature in its OCI artifact", root.Provider, root.Version)})
		}
		blob = rel.Checksums.File(f.File, fileName(f, root.Provider))
	}
	blob.From = root.Root
	return blob, nil
}

// originFile is a file of an origin release: SHA256SUMS and its
// signature as verified, a package as it downloads.
func originFile(rel *ingest.ProviderOriginRelease, g *pullthrough.File, f source.PulledFile, name string) *source.Blob {
	if f.File != source.FilePackage {
		return (&source.Checksums{Data: rel.SHA256SUMS, Signature: rel.Signature}).File(f.File, name)
	}
	return &source.Blob{Name: name, ContentType: "application/zip", Pinned: true, Pulling: g}
}
