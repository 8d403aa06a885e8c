package providers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// The Provider Registry Protocol (providers.v1), the proxy being the
// origin registry of its providers: its handler and its documents,
// rendered from what the source answers.

// ServeRegistry answers the Provider Registry Protocol, the proxy being
// the origin registry of its providers.
func (h *Handlers) ServeRegistry(w http.ResponseWriter, r *http.Request) {
	host, ok := h.Hostname(w, r)
	if !ok {
		return
	}
	req, key, ok := respond.ReadDocRequest(h.Responder, w, r, host+" ", ProvidersPath, ParseRegistryPath, func(req RegistryRequest) (names.Kind, string) {
		return names.KindProvider, names.Provider{Hostname: host, Namespace: req.Namespace, Type: req.Type}.String()
	})
	if !ok {
		return
	}
	p := names.Provider{Hostname: host, Namespace: req.Namespace, Type: req.Type}
	// The address as clients write it (with the port they use), for the page.
	shown := p.String()
	if h.Opts.RegistryHostname == "" {
		shown = strings.ToLower(r.Host) + "/" + req.Namespace + "/" + req.Type
	}
	h.ServeDoc(w, r, key, func(ctx context.Context) (any, time.Time, error) {
		if !req.Download {
			return h.registryVersions(ctx, p, shown)
		}
		doc, err := h.registryDownload(ctx, p, req)
		return doc, time.Time{}, err
	})
}

// registryVersions is the registry protocol's versions document: the
// versions it can offer, with their protocols and platforms. Versions it
// cannot offer are left out and explained in "warnings", which OpenTofu
// and Terraform print, as are the deprecated versions it lists; when
// none is left the answer is 404 naming why.
func (h *Handlers) registryVersions(ctx context.Context, p names.Provider, shown string) (any, time.Time, error) {
	l, err := h.source.ProviderVersions(ctx, p, names.ViaRegistry, source.ListOptions{Need: source.NeedSummary})
	if err != nil {
		return nil, l.At, err
	}
	doc := wire.RegistryVersions{Versions: []*wire.RegistryVersion{}}
	var unsigned []*wire.RegistryVersion // listed only if nothing else is
	for _, tag := range slices.Sorted(maps.Keys(l.Refused)) {
		doc.Warnings = append(doc.Warnings, fmt.Sprintf("the tag %q is left out: it looks like a version but is none (%s)", tag, l.Refused[tag]))
	}
	for _, e := range l.Versions {
		rv, warn := h.listedVersion(shown, l, e.Version)
		switch {
		case rv != nil && warn != "":
			unsigned = append(unsigned, rv)
		case rv != nil:
			doc.Versions = append(doc.Versions, rv)
		}
		if warn != "" {
			addWarning(&doc, warn)
		}
	}
	for _, w := range l.Warnings {
		addWarning(&doc, w)
	}
	listed := listedVersions(doc.Versions)
	for _, w := range deprecationWarnings(shown, listed, l.Deprecated) {
		addWarning(&doc, w)
	}
	for _, w := range vulnerabilityWarnings(shown, listed, l.Vulnerable) {
		addWarning(&doc, w)
	}
	h.Observer.Deprecations(names.KindProvider, shown, listed, l.Deprecated)
	h.Observer.Vulnerabilities(shown, listed, l.Vulnerable)
	if len(doc.Versions) == 0 {
		h.Log.Warn("no version can be offered through the registry protocol", "provider", p.String(), "reasons", strings.Join(doc.Warnings, "; "))
		if len(unsigned) == 0 {
			return nil, l.At, source.NotFoundf("provider %s has %s, none of which this proxy can offer through the registry protocol: %s", p, names.Plural(len(l.Versions), "version"), strings.Join(doc.Warnings, "; "))
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
func (h *Handlers) listedVersion(shown string, l source.ProviderListing, v names.Version) (*wire.RegistryVersion, string) {
	if tag, ok := l.Unresolvable[v.String()]; ok {
		return nil, fmt.Sprintf("%s is left out: its tag is %q, but OpenTofu resolves the tag %q, which does not exist (retag it)", v, tag, names.TagForVersion(v))
	}
	if err := l.Left[v.String()]; err != nil {
		var d *source.Denied
		if errors.As(err, &d) {
			return nil, fmt.Sprintf("%s is left out: %s", v, d.Reason)
		}
		return nil, skipReason(v, err)
	}
	rel := l.Releases[v.String()]
	if rel == nil {
		return nil, ""
	}
	if rel.Pulled != nil { // an origin's: as the origin lists it
		return &wire.RegistryVersion{Version: v.String(), Protocols: rel.Protocols, Platforms: registryPlatforms(rel.Platforms)}, ""
	}
	platforms := rel.Platforms
	for _, o := range rel.Others { // later mappings' platforms, where they can be offered
		if len(o.SigningKeyIDs) > 0 || h.signer != nil {
			for _, pl := range o.Platforms {
				if !slices.Contains(platforms, pl) {
					platforms = append(slices.Clip(platforms), pl)
				}
			}
		}
	}
	h.Observer.ProviderVersion(shown, names.ViaRegistry.String(), v, platforms, len(rel.SigningKeyIDs) > 0)
	rv := &wire.RegistryVersion{Version: v.String(), Protocols: protocols(rel), Platforms: registryPlatforms(platforms)}
	if len(rel.SigningKeyIDs) == 0 && h.signer == nil {
		return rv, unsignedWarning(v)
	}
	return rv, ""
}

// maxDeprecationWarnings bounds the warnings a versions document gives
// deprecated versions: clients print every warning on every init.
const maxDeprecationWarnings = 10

// deprecationWarnings are the warnings saying which of the versions
// listed (newest first) the policy deprecates and why, at most
// maxDeprecationWarnings of them and then how many more there are.
func deprecationWarnings(shown string, listed names.VersionList, deprecated map[string]string) []string {
	return versionWarnings(shown, listed, deprecated, "is deprecated: %s", "deprecated too (oci-tofu policy test says why)")
}

// vulnerabilityWarnings are the warnings saying which of the versions
// listed (newest first) have known vulnerabilities a policy rule warns
// of, and which, bounded as deprecationWarnings.
func vulnerabilityWarnings(shown string, listed names.VersionList, vulnerable map[string]string) []string {
	return versionWarnings(shown, listed, vulnerable, "has %s", "known vulnerabilities too (oci-tofu vulns says which)")
}

// versionWarnings are the warnings of the versions listed (newest first)
// that msgs has a message for, "version V of ADDR "+format(message), at
// most maxDeprecationWarnings and then how many more "are "+more.
func versionWarnings(shown string, listed names.VersionList, msgs map[string]string, format, more string) []string {
	var out []string
	n := 0
	for _, v := range listed {
		msg := msgs[v.String()]
		switch {
		case msg == "":
		case len(out) < maxDeprecationWarnings:
			out = append(out, fmt.Sprintf("version %s of %s "+format, v, shown, msg))
		default:
			n++
		}
	}
	if n > 0 {
		verb := map[bool]string{true: "is", false: "are"}[n == 1]
		if strings.HasPrefix(more, "known") {
			verb = map[bool]string{true: "has", false: "have"}[n == 1]
		}
		out = append(out, fmt.Sprintf("…and %s of %s %s %s", names.Plural(n, "older version"), shown, verb, more))
	}
	return out
}

// listedVersions are the versions of a versions document, newest first
// (the document lists unsorted versions: unparseable entries cannot be
// in it, the proxy wrote them).
func listedVersions(rvs []*wire.RegistryVersion) names.VersionList {
	out := make(names.VersionList, 0, len(rvs))
	for _, rv := range rvs {
		if v, err := names.ParseVersion(rv.Version); err == nil {
			out = append(out, v)
		}
	}
	out.Sort()
	slices.Reverse(out)
	return out
}

func registryPlatforms(ps []names.Platform) []wire.RegistryPlatform {
	var out []wire.RegistryPlatform
	for _, pl := range ps {
		out = append(out, wire.RegistryPlatform{OS: pl.OS, Arch: pl.Arch})
	}
	return out
}

// protocols are a release's plugin protocol versions; "5.0" when unknown
// (third-party artifacts; see docs/proxy.md).
func protocols(rel *source.ProviderRelease) []string {
	if rel.Summarized && len(rel.Protocols) > 0 {
		return rel.Protocols
	}
	return []string{"5.0"}
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

// addWarning appends w to doc's warnings unless it is there already.
func addWarning(doc *wire.RegistryVersions, w string) {
	if !slices.Contains(doc.Warnings, w) {
		doc.Warnings = append(doc.Warnings, w)
	}
}

// registryDownload is …/:version/download/:os/:arch: the package's
// location, SHA256SUMS and its signature, the keys, and (OpenTofu 1.12,
// for a stored release) every platform's hashes and size, so tofu records
// a complete lock entry. An origin's package starts downloading at once,
// since the client asks for it next.
func (h *Handlers) registryDownload(ctx context.Context, p names.Provider, req RegistryRequest) (any, error) {
	root, err := h.source.ResolveProvider(ctx, p, req.Version, names.ViaRegistry)
	if err != nil {
		return nil, err
	}
	rel, err := h.source.ReadProvider(ctx, root, source.NeedPackages|source.NeedChecksums)
	if err != nil {
		return nil, err
	}
	pl := req.Platform
	if err := rel.Refused[pl]; err != nil {
		return nil, err
	}
	pkg := rel.Packages[pl]
	if pkg == nil {
		return nil, source.NotFoundf("provider %s %s has no package for %s", p, req.Version, pl)
	}
	rel = pkg.Release // with several mappings, the first holding the platform
	sums := names.ProviderSHA256SUMSName(p.Type, req.Version.String())
	if rel.Pulled != nil {
		if w, ok := h.source.(source.Warmer); ok {
			w.WarmProvider(ctx, rel.ProviderRoot, pl)
		}
		protos := rel.Protocols
		if len(protos) == 0 {
			protos = protocols(rel)
		}
		return wire.RegistryDownload{Protocols: protos, OS: pl.OS, Arch: pl.Arch, Filename: pkg.Filename,
			DownloadURL: h.fileURL(rel, pkg.Filename), SHASumsURL: h.fileURL(rel, sums), SHASumsSignatureURL: h.fileURL(rel, names.ProviderSignatureName(p.Type, req.Version.String())),
			SHASum: pkg.SHA256, SigningKeys: wire.SigningKeys{GPGPublicKeys: pkg.Keys}}, nil
	}
	cs, err := h.checksums(ctx, rel)
	if err != nil {
		return nil, err
	}
	zipHex := pkg.Layer.Digest.Encoded()
	name, err := checkListed(rel, cs, pl, zipHex)
	if err != nil {
		return nil, err
	}
	return wire.RegistryDownload{
		Protocols:           protocols(rel),
		OS:                  pl.OS,
		Arch:                pl.Arch,
		Filename:            name,
		DownloadURL:         h.fileURL(rel, names.ProviderZipName(p.Type, req.Version.String(), pl)),
		SHASumsURL:          h.fileURL(rel, sums),
		SHASumsSignatureURL: h.fileURL(rel, sums+".sig"),
		SHASum:              zipHex,
		SigningKeys:         wire.SigningKeys{GPGPublicKeys: cs.Keys},
		Packages:            packages(rel),
	}, nil
}

// packages is the download document's packages object: for every
// platform of the release, its lock-file hashes and its size.
func packages(rel *source.ProviderRelease) map[string]wire.RegistryPackage {
	out := make(map[string]wire.RegistryPackage, len(rel.Platforms))
	for _, pl := range rel.Platforms {
		if pkg := rel.Packages[pl]; pkg != nil {
			out[pl.String()] = wire.RegistryPackage{Hashes: pkg.Hashes, PackageSize: pkg.Layer.Size}
		}
	}
	return out
}
