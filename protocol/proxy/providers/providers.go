// Package providers serves the provider protocols: the Provider Network
// Mirror Protocol, the Provider Registry Protocol (providers.v1, with the
// proxy as origin registry: registry.go), the archive URLs their
// documents name and, with pull-through, the files of releases being
// pulled, and the SBOM pages of the versions it serves (sbom.go). It
// renders what its source.Providers answers and answers through respond;
// the SHA256SUMS it signs for releases without a publisher's are its own.
package providers

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Paths the provider handlers answer on (the server mounts them there).
const (
	MirrorPrefix  = "/v1/mirror/"
	ProvidersPath = "/v1/providers/"
	ArchivePrefix = "/v1/archives/"
)

// PullPrefix serves the files of provider releases the registry does not
// hold yet: <via>/<host>/<namespace>/<type>/<version>/<SHA256SUMS
// sha256>/<file>, via being "m" (network mirror) or "r" (registry
// protocol). The SHA256SUMS digest pins the URL to the origin release whose
// signature was verified when the metadata handed the URL out.
const PullPrefix = "/v1/pull/"

// Handlers serve the Provider Network Mirror Protocol, the
// Provider Registry Protocol (providers.v1), the archives their documents
// name and, with pull-through, the files of releases being pulled,
// rendering what their source answers (composed by the server: proxy/sources.go).
type Handlers struct {
	*respond.Responder
	source    source.Providers
	generated *cache.Cache[*signedSums] // SHA256SUMS the proxy signed itself
	signer    *pgp.Signer               // signs those (nil: none)
}

// New is the provider handlers answering with out from src; signer
// (nil: none) signs the SHA256SUMS generated for releases without a
// publisher's, which are cached as generated says.
func New(out *respond.Responder, src source.Providers, signer *pgp.Signer, generated cache.Options) *Handlers {
	return &Handlers{Responder: out, source: src, signer: signer, generated: cache.New[*signedSums](generated)}
}

// ServeMirror answers the Provider Network Mirror Protocol.
func (h *Handlers) ServeMirror(w http.ResponseWriter, r *http.Request) {
	req, key, ok := respond.ReadDocRequest(h.Responder, w, r, "", MirrorPrefix, ParseMirrorPath, func(req MirrorRequest) (names.Kind, string) {
		return names.KindProvider, req.Provider.String()
	})
	if !ok {
		return
	}
	h.ServeDoc(w, r, key, func(ctx context.Context) (any, time.Time, error) {
		if req.Index {
			return h.mirrorIndex(ctx, req.Provider)
		}
		doc, err := h.mirrorVersion(ctx, req.Provider, req.Version)
		return doc, time.Time{}, err
	})
}

// mirrorIndex is the network mirror's index.json: the versions the
// mirror can serve. A version OpenTofu's oci_mirror would list from a
// non-canonical tag alone ("1.2") is left out, as it is from /versions:
// listing it would make every client that picks it fail (`oci-tofu
// verify` reports such tags); so are those the source says why it leaves
// out (the policy, the attestation rule).
func (h *Handlers) mirrorIndex(ctx context.Context, p names.Provider) (any, time.Time, error) {
	l, err := h.source.ProviderVersions(ctx, p, names.ViaMirror, source.ListOptions{})
	if err != nil {
		return nil, l.At, err
	}
	index := wire.MirrorIndex{Versions: make(map[string]struct{}, len(l.Versions))}
	var stored names.VersionList
	for _, e := range l.Versions {
		v := e.Version.String()
		if e.Stored {
			stored = append(stored, e.Version)
		}
		if tag, bad := l.Unresolvable[v]; bad {
			h.Log.Warn("version left out: its only tag is not the one OpenTofu resolves", "provider", p.String(), "version", v, "tag", tag)
			continue
		}
		if l.Left[v] == nil {
			index.Versions[v] = struct{}{}
		}
	}
	h.Observer.ProviderListed(p.String(), names.ViaMirror.String(), stored)
	// The network mirror protocol has no word for a deprecation: the
	// page alone shows it.
	h.Observer.Deprecations(names.KindProvider, p.String(), stored, l.Deprecated)
	h.Observer.Vulnerabilities(p.String(), stored, l.Vulnerable)
	return index, l.At, nil
}

// mirrorVersion is <version>.json: every platform's archive, with its
// lock-file hashes (a stored package's trusted h1 and its zh; an origin's
// package's zh alone).
func (h *Handlers) mirrorVersion(ctx context.Context, p names.Provider, v names.Version) (any, error) {
	root, err := h.source.ResolveProvider(ctx, p, v, names.ViaMirror)
	if err != nil {
		return nil, err
	}
	rel, err := h.source.ReadProvider(ctx, root, source.NeedPackages)
	if err != nil {
		return nil, err
	}
	if root.Root != nil {
		h.Observer.ProviderVersion(p.String(), names.ViaMirror.String(), v, root.Root.Index.SortedPlatforms(), len(rel.SigningKeyIDs) > 0)
	}
	archives := make(map[string]wire.MirrorArchive, len(rel.Platforms))
	for _, pl := range rel.Platforms {
		if pkg := rel.Packages[pl]; pkg != nil {
			archives[pl.String()] = wire.MirrorArchive{URL: h.fileURL(pkg.Release, pkg.Filename), Hashes: pkg.Hashes}
		}
	}
	return wire.MirrorVersion{Archives: archives}, nil
}

// fileURL is the URL of a file of rel in a document (its base marked:
// respond.FileRef), signed when client authentication is on: an archive URL
// pinning a stored release's index, or a pull URL pinning an origin's
// SHA256SUMS.
func (h *Handlers) fileURL(rel *source.ProviderRelease, file string) string {
	if pr := rel.Pulled; pr != nil {
		return h.FileRef(PullPrefix, pr.Via.Code()+"/"+archivePath(pr.Served, rel.Version, pr.Sums, file))
	}
	return h.FileRef(ArchivePrefix, archivePath(rel.Provider, rel.Version, rel.Root.Digest, file))
}

// ServeArchive serves a zip, SHA256SUMS or signature named by a URL from
// the metadata: the release its index digest pins.
func (h *Handlers) ServeArchive(w http.ResponseWriter, r *http.Request) {
	req, ok := respond.SignedRequest(h.Responder, w, r, ArchivePrefix, ParseArchivePath, func(req ArchiveRequest) (names.Kind, string) {
		return names.KindProvider, req.Provider.String()
	})
	if !ok {
		return
	}
	if req.File == ArchiveZip {
		respond.EventOf(r.Context()).Serving(respond.Artifact{Kind: names.KindProvider, Address: req.Provider.String(), Version: req.Version.String(), Platform: req.Platform.String(), File: "package"})
	}
	blob, err := h.archive(r.Context(), req)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	h.Deliver(w, r, blob)
}

// archive is the file an archive URL names.
func (h *Handlers) archive(ctx context.Context, req ArchiveRequest) (*source.Blob, error) {
	root, err := h.source.ResolveProviderAt(ctx, req.Provider, req.Version, req.Index)
	if err != nil {
		return nil, err
	}
	if req.File == ArchiveZip {
		return h.source.OpenProviderPackage(ctx, root, req.Platform)
	}
	rel, err := h.source.ReadProvider(ctx, root, source.NeedPackages|source.NeedChecksums)
	if err != nil {
		return nil, err
	}
	cs, err := h.checksums(ctx, rel)
	if err != nil {
		return nil, err
	}
	name := names.ProviderSHA256SUMSName(req.Provider.Type, req.Version.String())
	if req.File == ArchiveSignature {
		name = names.ProviderSignatureName(req.Provider.Type, req.Version.String())
	}
	return cs.File(fileKinds[req.File], name), nil
}

// ServePull serves a file named by a pull URL: from the pull in flight,
// from the registry once the release is stored, or by starting the pull.
func (h *Handlers) ServePull(w http.ResponseWriter, r *http.Request) {
	rest, client, ok := h.AuthorizedPath(w, r, PullPrefix)
	if !ok {
		return
	}
	code, rest, _ := strings.Cut(rest, "/")
	via, _ := names.ViaOfCode(code) // a code naming neither: no source serves it
	req, err := ParseArchivePath(rest)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	f := source.PulledFile{Via: via, Provider: req.Provider, Version: req.Version, Sums: req.Index, File: fileKinds[req.File], Platform: req.Platform}
	scoped := f.Provider // the address clients use: the registry protocol's is on the proxy's hostname
	if via == names.ViaRegistry {
		if f.RegistryHost, err = h.RegistryHostname(r); err != nil {
			h.Fail(w, r, err)
			return
		}
		scoped.Hostname = f.RegistryHost
	}
	if !h.InScope(w, r, client, names.KindProvider, scoped.String()) {
		return
	}
	if f.File == source.FilePackage {
		respond.EventOf(r.Context()).Serving(respond.Artifact{Kind: names.KindProvider, Address: scoped.String(), Version: req.Version.String(), Platform: req.Platform.String(), File: "package"})
	}
	pf, ok := h.source.(source.PulledFiles)
	if !ok {
		h.Fail(w, r, source.NotFoundf("provider %s is not pulled through from any allowed origin", req.Provider))
		return
	}
	blob, err := pf.OpenPulledFile(r.Context(), f)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	h.Deliver(w, r, blob)
}

// fileKinds are the source's words for the files archive URLs name.
var fileKinds = map[ArchiveFile]source.ProviderFileKind{
	ArchiveZip:        source.FilePackage,
	ArchiveSHA256SUMS: source.FileSHA256SUMS,
	ArchiveSignature:  source.FileSignature,
}

// CacheCost is what the handlers' own cache (generated SHA256SUMS) holds,
// by its count: part of what Options.CacheBytes bounds.
func (h *Handlers) CacheCost() int64 { return h.generated.Cost() }

// The Provider Network Mirror and Provider Registry Protocols' paths, and
// the archive and pull URLs their documents hand out.

// MirrorRequest is a parsed Provider Network Mirror Protocol path:
// :hostname/:namespace/:type/index.json or …/:version.json.
type MirrorRequest struct {
	Provider names.Provider
	// Version is unset for index.json.
	Version names.Version
	Index   bool
}

// ParseMirrorPath parses the escaped path below the mirror's base URL.
func ParseMirrorPath(escaped string) (MirrorRequest, error) {
	seg, err := respond.SplitPath(escaped, 4)
	if err != nil {
		return MirrorRequest{}, err
	}
	p, err := respond.ParseProvider(seg[0], seg[1], seg[2])
	if err != nil {
		return MirrorRequest{}, err
	}
	r := MirrorRequest{Provider: p}
	if seg[3] == "index.json" {
		r.Index = true
		return r, nil
	}
	vs, ok := strings.CutSuffix(seg[3], ".json")
	if !ok {
		return MirrorRequest{}, respond.BadPath("want index.json or <version>.json, got %q", seg[3])
	}
	if r.Version, err = respond.ParseVersion(vs); err != nil {
		return MirrorRequest{}, err
	}
	return r, nil
}

// RegistryRequest is a parsed Provider Registry Protocol path:
// :namespace/:type/versions or :namespace/:type/:version/download/:os/:arch.
type RegistryRequest struct {
	Namespace, Type string
	// Download is false for the versions listing.
	Download bool
	Version  names.Version
	Platform names.Platform
}

// ParseRegistryPath parses the escaped path below providers.v1.
func ParseRegistryPath(escaped string) (RegistryRequest, error) {
	n := strings.Count(escaped, "/") + 1
	if n != 3 && n != 6 {
		return RegistryRequest{}, respond.BadPath("want :namespace/:type/versions or :namespace/:type/:version/download/:os/:arch")
	}
	seg, err := respond.SplitPath(escaped, n)
	if err != nil {
		return RegistryRequest{}, err
	}
	var r RegistryRequest
	if r.Namespace, err = respond.ParseName("namespace", seg[0]); err != nil {
		return r, err
	}
	if r.Type, err = respond.ParseName("type", seg[1]); err != nil {
		return r, err
	}
	if n == 3 {
		if seg[2] != "versions" {
			return RegistryRequest{}, respond.BadPath("want :namespace/:type/versions")
		}
		return r, nil
	}
	if seg[3] != "download" {
		return RegistryRequest{}, respond.BadPath("want :namespace/:type/:version/download/:os/:arch")
	}
	r.Download = true
	if r.Version, err = respond.ParseVersion(seg[2]); err != nil {
		return RegistryRequest{}, err
	}
	if r.Platform, err = parsePlatform(seg[4], seg[5]); err != nil {
		return RegistryRequest{}, err
	}
	return r, nil
}

func parsePlatform(os, arch string) (names.Platform, error) {
	if strings.Contains(os, "_") || strings.Contains(arch, "_") {
		return names.Platform{}, respond.BadPath("invalid platform %q/%q", os, arch)
	}
	p, err := names.ParsePlatform(os + "_" + arch)
	if err != nil {
		return names.Platform{}, respond.BadPath("%v", err)
	}
	return p, nil
}

// ArchiveFile says which file an archive URL names.
type ArchiveFile int

// The files of a provider release the proxy serves.
const (
	ArchiveZip ArchiveFile = iota + 1
	ArchiveSHA256SUMS
	ArchiveSignature
)

// ArchiveRequest is a parsed archive URL path:
// :hostname/:namespace/:type/:version/:index-sha256-hex/:filename, where
// filename is terraform-provider-<type>_<version>_<os>_<arch>.zip,
// …_SHA256SUMS or …_SHA256SUMS.sig. The index digest pins the URL to the
// exact release whose metadata handed it out.
type ArchiveRequest struct {
	Provider names.Provider
	Version  names.Version
	Index    digest.Digest
	File     ArchiveFile
	Platform names.Platform
}

// ParseArchivePath parses the escaped path below the archive prefix.
func ParseArchivePath(escaped string) (ArchiveRequest, error) {
	seg, err := respond.SplitPath(escaped, 6)
	if err != nil {
		return ArchiveRequest{}, err
	}
	p, err := respond.ParseProvider(seg[0], seg[1], seg[2])
	if err != nil {
		return ArchiveRequest{}, err
	}
	r := ArchiveRequest{Provider: p}
	if r.Version, err = respond.ParseVersion(seg[3]); err != nil {
		return ArchiveRequest{}, err
	}
	if r.Index, err = respond.ParseHexDigest(seg[4]); err != nil {
		return ArchiveRequest{}, err
	}
	if r.File, r.Platform, err = archiveFile(p, seg[3], seg[5]); err != nil {
		return ArchiveRequest{}, err
	}
	return r, nil
}

// archiveFile tells which file of release p/version a file name is.
func archiveFile(p names.Provider, version, name string) (ArchiveFile, names.Platform, error) {
	f, err := names.ParseProviderFilename(name)
	if err != nil {
		return 0, names.Platform{}, respond.BadPath("%v", err)
	}
	if f.Type != p.Type || f.Version != version {
		return 0, names.Platform{}, respond.BadPath("file %q does not belong to %s %s", name, p, version)
	}
	switch f.Kind {
	case names.ProviderZip:
		return ArchiveZip, f.Platform, nil
	case names.ProviderSHA256SUMS:
		return ArchiveSHA256SUMS, names.Platform{}, nil
	case names.ProviderSignature:
		if name != names.ProviderSignatureName(p.Type, version) {
			return 0, names.Platform{}, respond.BadPath("unknown signature file %q", name)
		}
		return ArchiveSignature, names.Platform{}, nil
	}
	return 0, names.Platform{}, respond.BadPath("unknown file %q", name)
}

// archivePath is the escaped path (below the archive prefix) of a file.
func archivePath(p names.Provider, v names.Version, index digest.Digest, file string) string {
	return strings.Join([]string{
		url.PathEscape(p.Hostname), p.Namespace, p.Type, url.PathEscape(v.String()), index.Encoded(), url.PathEscape(file),
	}, "/")
}
