package proxy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// The registry protocol's documents of what the registry holds: the
// versions document and the download document.

// versionsDoc lists the versions the registry protocol can offer, with
// their protocols and platforms, read from each version's index alone
// (one round trip each, many at once within bounds). Versions it cannot
// offer are left out and explained in "warnings", which OpenTofu prints;
// when none is left the answer is 404 naming why.
func (h *heldProviders) versionsDoc(ctx context.Context, p names.Provider, shown string) (any, time.Time, error) {
	repo, l, err := h.listingPrefetched(ctx, p)
	if err != nil {
		return nil, l.At, err
	}
	out := make([]*wire.RegistryVersion, len(l.Versions))
	warn := make([]string, len(l.Versions))
	err = h.store.EachVersion(ctx, l.Versions, func(ctx context.Context, i int, v names.Version) error {
		var err error
		out[i], warn[i], err = h.listedVersion(ctx, shown, repo, l, p, v)
		return err
	})
	if err != nil {
		return nil, l.At, err
	}
	doc := wire.RegistryVersions{Versions: []*wire.RegistryVersion{}}
	var unsigned []*wire.RegistryVersion // listed only if nothing else is
	for _, tag := range slices.Sorted(maps.Keys(l.Refused)) {
		doc.Warnings = append(doc.Warnings, fmt.Sprintf("the tag %q is left out: it looks like a version but is none (%s)", tag, l.Refused[tag]))
	}
	for i := range l.Versions {
		switch {
		case out[i] != nil && warn[i] != "":
			unsigned = append(unsigned, out[i])
		case out[i] != nil:
			doc.Versions = append(doc.Versions, out[i])
		}
		if warn[i] != "" {
			doc.Warnings = append(doc.Warnings, warn[i])
		}
	}
	if len(doc.Versions) == 0 {
		h.log.Warn("no version can be offered through the registry protocol", "provider", p.String(), "reasons", strings.Join(doc.Warnings, "; "))
		if len(unsigned) == 0 {
			return nil, l.At, source.NotFoundf("provider %s has %s, none of which this proxy can offer through the registry protocol: %s", p, plural(len(l.Versions), "version"), strings.Join(doc.Warnings, "; "))
		}
		// OpenTofu and Terraform print the warnings of a versions answer
		// ("Additional provider information from registry") only when it
		// lists a version; of a 404 they print nothing but "does not have
		// a provider". So the unsigned versions are listed, the warnings
		// say why they cannot be installed from here, and their download
		// answers 409.
		doc.Versions = unsigned
	}
	return doc, l.At, nil
}

// listedVersion is one entry of the versions document, or the warning
// saying why the version is left out.
func (h *heldProviders) listedVersion(ctx context.Context, shown string, repo *store.Repo, l store.Listing, p names.Provider, v names.Version) (*wire.RegistryVersion, string, error) {
	if tag, ok := l.Unresolvable[v.String()]; ok {
		return nil, fmt.Sprintf("%s is left out: its tag is %q, but OpenTofu resolves the tag %q, which does not exist (retag it)", v, tag, names.TagForVersion(v)), nil
	}
	if warn := h.policyWarning(p, v); warn != "" { // policy.go
		return nil, warn, nil
	}
	pv, err := repo.ProviderVersion(ctx, v)
	if err != nil {
		return nil, skipReason(v, err), keepFatal(err)
	}
	if err := repo.Admitted(ctx, store.KindProvider, pv.Index.Digest); err != nil { // admission.go
		if r, ok := store.Refused(err); ok {
			return nil, refusedWarning(v, r), nil
		}
		return nil, skipReason(v, err), keepFatal(err)
	}
	if warn, err := h.factsWarning(ctx, policy.KindProvider, p.String(), v, releaseRoot{repo: repo, subject: pv.Index.Digest, pv: pv}); warn != "" || err != nil { // policy_facts.go
		return nil, warn, err
	}
	sum, known, err := repo.Summary(ctx, pv)
	if err != nil {
		return nil, skipReason(v, err), keepFatal(err)
	}
	platforms := h.allowedPlatforms(p, pv.SortedPlatforms()) // policy.go
	h.seen.providerVersion(shown, viaRegistry, v, platforms, len(sum.SigningKeyIDs) > 0)
	rv := &wire.RegistryVersion{Version: v.String(), Protocols: protocols(sum, known)}
	for _, pl := range platforms {
		rv.Platforms = append(rv.Platforms, wire.RegistryPlatform{OS: pl.OS, Arch: pl.Arch})
	}
	if len(sum.SigningKeyIDs) == 0 && h.opts.Signer == nil {
		return rv, unsignedWarning(v), nil
	}
	return rv, "", nil
}

// unsignedWarning says why an unsigned version cannot be installed through
// the registry protocol, and what to do instead.
func unsignedWarning(v names.Version) string {
	return fmt.Sprintf("%s has no publisher signature and this proxy has no signing key, so it cannot be installed through the registry protocol: install it through the proxy's network mirror (/v1/mirror/), or push it signed, or give the proxy --signing-key", v)
}

// skipReason explains a version left out of a listing.
func skipReason(v names.Version, err error) string {
	switch store.FailureOf(err) {
	case oci.FailureNotFound:
		return v.String() + " is left out: its tag vanished while the versions were listed"
	case oci.FailureInvalid:
		return v.String() + " is left out: its OCI artifact is not a valid provider"
	}
	return ""
}

// keepFatal passes on errors that must fail a whole listing (the registry
// failing, not one version's artifact).
func keepFatal(err error) error {
	if store.Skippable(err) {
		return nil
	}
	return err
}

// plural is "1 version", "2 versions".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// downloadDoc is …/:version/download/:os/:arch: the package's location,
// SHA256SUMS and its signature, the keys, and (OpenTofu 1.12) every
// platform's hashes and size, so tofu records a complete lock entry.
func (h *heldProviders) downloadDoc(ctx context.Context, p names.Provider, req RegistryRequest) (any, error) {
	rel, err := h.releaseUnadmitted(ctx, p, req.Version) // admitted by readRelease
	if err != nil {
		return nil, err
	}
	perr := h.platformRefusal(p, req.Version, req.Platform) // policy.go
	if _, ok := rel.pv.Platforms[req.Platform]; !ok {
		perr = source.NotFoundf("provider %s %s has no package for %s", p, req.Version, req.Platform)
	}
	if perr != nil {
		// A release that is not admitted has no platforms to speak of.
		if err := h.admitted(ctx, rel); err != nil {
			return nil, err
		}
		return nil, perr
	}
	if err := h.readRelease(ctx, rel, needProvenance|needZips); err != nil {
		return nil, err
	}
	cs, err := h.checksums(ctx, rel, rel.zips)
	if err != nil {
		return nil, err
	}
	zip := rel.zips[req.Platform]
	name, err := cs.checkListed(rel, req.Platform, zip.Digest.Encoded())
	if err != nil {
		return nil, err
	}
	sums := names.ProviderSHA256SUMSName(p.Type, req.Version.String())
	return wire.RegistryDownload{
		Protocols:           protocols(rel.summary()),
		OS:                  req.Platform.OS,
		Arch:                req.Platform.Arch,
		Filename:            name,
		DownloadURL:         h.archiveRef(rel, names.ProviderZipName(p.Type, req.Version.String(), req.Platform)),
		SHASumsURL:          h.archiveRef(rel, sums),
		SHASumsSignatureURL: h.archiveRef(rel, sums+".sig"),
		SHASum:              zip.Digest.Encoded(),
		SigningKeys:         wire.SigningKeys{GPGPublicKeys: cs.keys},
		Packages:            rel.packages(h.allowedZips(p, rel.zips)), // policy.go
	}, nil
}

// summary is what the release's provenance says of it.
func (rel *release) summary() (oci.ProvenanceSummary, bool) {
	if rel.prov == nil {
		return oci.ProvenanceSummary{}, false
	}
	return oci.ProvenanceSummary{Protocols: rel.prov.Meta.Protocols, SigningKeyIDs: rel.prov.Meta.SigningKeyIDs}, true
}

// packages is the download document's packages object: for every platform
// of the version, its lock-file hashes and its size.
func (rel *release) packages(zips map[names.Platform]ocispec.Descriptor) map[string]wire.RegistryPackage {
	out := make(map[string]wire.RegistryPackage, len(zips))
	for pl, z := range zips {
		out[pl.String()] = wire.RegistryPackage{Hashes: rel.hashes(pl, z), PackageSize: z.Size}
	}
	return out
}
