package proxy

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// mergedProviders is the providerSource of several mappings (--config's
// oci_mirror blocks, after --provider-template) that may admit one
// address, merged as OpenTofu merges the oci_mirror blocks of its CLI
// configuration (its MultiSource; docs/proxy.md "Several mappings"): the
// versions are those of every mapping that admits the address; each
// version and platform comes from the first mapping, in order, that holds
// it. A mapping holding nothing of the address (404) is passed over; any
// other failure is the answer, as it is for tofu. Without pull-through
// only: pull-through stores into the first mapping alone.
type mergedProviders struct {
	views []*heldProviders // one per mapping, in order
}

// newMergedProviders makes one view per mapping, sharing held's
// responder and generated-signature cache.
func newMergedProviders(held *heldProviders) *mergedProviders {
	m := &mergedProviders{}
	for _, mp := range held.mappings {
		m.views = append(m.views, &heldProviders{responder: held.responder, mappings: store.ProviderMappings{mp}, generated: held.generated})
	}
	return m
}

// admitting are the views whose mapping admits p, in order.
func (m *mergedProviders) admitting(p names.Provider) []*heldProviders {
	var out []*heldProviders
	for _, h := range m.views {
		if _, err := h.mappings.Map(p); err == nil {
			out = append(out, h)
		}
	}
	if len(out) == 0 {
		return m.views[:1] // its 404 says why
	}
	return out
}

// eachHolding calls read for each view admitting p, in order, passing
// over those that hold nothing of what is asked (404); it stops at the
// first other failure, or when read says it is done. The error is the
// first view's 404 when no view held anything.
func (m *mergedProviders) eachHolding(p names.Provider, read func(h *heldProviders) (done bool, err error)) error {
	var first error
	held := false
	for _, h := range m.admitting(p) {
		done, err := read(h)
		switch {
		case err != nil && source.Absent(err):
			if first == nil {
				first = err
			}
			continue
		case err != nil:
			return err
		}
		held = true
		if done {
			return nil
		}
	}
	if !held {
		return first
	}
	return nil
}

// networkMirrorIndex is the union of the mappings' versions.
func (m *mergedProviders) networkMirrorIndex(ctx context.Context, p names.Provider) (any, time.Time, error) {
	index := wire.MirrorIndex{Versions: map[string]struct{}{}}
	var at time.Time
	err := m.eachHolding(p, func(h *heldProviders) (bool, error) {
		doc, vat, err := h.networkMirrorIndex(ctx, p)
		if err == nil {
			for v := range doc.(wire.MirrorIndex).Versions {
				index.Versions[v] = struct{}{}
			}
			at = earliestNonZero(at, vat)
		}
		return false, err
	})
	return index, at, err
}

// networkMirrorVersion takes each platform's archive from the first
// mapping holding the version for that platform.
func (m *mergedProviders) networkMirrorVersion(ctx context.Context, p names.Provider, v names.Version) (any, error) {
	out := wire.MirrorVersion{Archives: map[string]wire.MirrorArchive{}}
	err := m.eachHolding(p, func(h *heldProviders) (bool, error) {
		doc, err := h.networkMirrorVersion(ctx, p, v)
		if err == nil {
			for pl, a := range doc.(wire.MirrorVersion).Archives {
				if _, taken := out.Archives[pl]; !taken {
					out.Archives[pl] = a
				}
			}
		}
		return false, err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// versionsDoc lists every mapping's versions; a version's protocols are
// its first holder's, its platforms those of every holder.
func (m *mergedProviders) versionsDoc(ctx context.Context, p names.Provider, shown string) (any, time.Time, error) {
	out := wire.RegistryVersions{Versions: []*wire.RegistryVersion{}}
	byVersion := map[string]*wire.RegistryVersion{}
	var at time.Time
	err := m.eachHolding(p, func(h *heldProviders) (bool, error) {
		doc, vat, err := h.versionsDoc(ctx, p, shown)
		if err != nil {
			return false, err
		}
		at = earliestNonZero(at, vat)
		d := doc.(wire.RegistryVersions)
		for _, rv := range d.Versions {
			mergeRegistryVersion(&out, byVersion, rv)
		}
		for _, w := range d.Warnings {
			addWarning(&out, w)
		}
		return false, nil
	})
	return out, at, err
}

// mergeRegistryVersion adds rv to doc, or its platforms to the entry of
// its version already there.
func mergeRegistryVersion(doc *wire.RegistryVersions, byVersion map[string]*wire.RegistryVersion, rv *wire.RegistryVersion) {
	have, ok := byVersion[rv.Version]
	if !ok {
		c := *rv
		c.Platforms = slices.Clone(rv.Platforms)
		byVersion[rv.Version] = &c
		doc.Versions = append(doc.Versions, &c)
		return
	}
	for _, pl := range rv.Platforms {
		if !slices.Contains(have.Platforms, pl) {
			have.Platforms = append(have.Platforms, pl)
		}
	}
}

// downloadDoc is the first mapping's holding the version for the
// platform.
func (m *mergedProviders) downloadDoc(ctx context.Context, p names.Provider, req RegistryRequest) (any, error) {
	var doc any
	err := m.eachHolding(p, func(h *heldProviders) (bool, error) {
		d, err := h.downloadDoc(ctx, p, req)
		doc = d
		return err == nil, err
	})
	return doc, err
}

// releaseAt is the release with that index digest in the first mapping
// holding it: the one an archive URL names.
func (m *mergedProviders) releaseAt(ctx context.Context, p names.Provider, v names.Version, index digest.Digest) (*release, error) {
	var rel *release
	err := m.eachHolding(p, func(h *heldProviders) (bool, error) {
		r, err := h.releaseAt(ctx, p, v, index)
		rel = r
		return err == nil, err
	})
	return rel, err
}

// serveHeldFile serves a file of a release found by releaseAt.
func (m *mergedProviders) serveHeldFile(w http.ResponseWriter, r *http.Request, rel *release, req ArchiveRequest) {
	m.views[0].serveHeldFile(w, r, rel, req)
}
