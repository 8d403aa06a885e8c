package providers

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
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
// rendering what their source answers (compose.go builds it).
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
	req, key, ok := respond.ReadDocRequest(h.Responder, w, r, "", MirrorPrefix, ParseMirrorPath)
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

// ServeRegistry answers the Provider Registry Protocol, the proxy being
// the origin registry of its providers.
func (h *Handlers) ServeRegistry(w http.ResponseWriter, r *http.Request) {
	host, ok := h.Hostname(w, r)
	if !ok {
		return
	}
	req, key, ok := respond.ReadDocRequest(h.Responder, w, r, host+" ", ProvidersPath, ParseRegistryPath)
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

// ServeArchive serves a zip, SHA256SUMS or signature named by a URL from
// the metadata: the release its index digest pins.
func (h *Handlers) ServeArchive(w http.ResponseWriter, r *http.Request) {
	req, ok := respond.SignedRequest(h.Responder, w, r, ArchivePrefix, ParseArchivePath)
	if !ok {
		return
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
	rest, ok := h.AdmittedPath(w, r, PullPrefix)
	if !ok {
		return
	}
	via, rest, _ := strings.Cut(rest, "/")
	req, err := ParseArchivePath(rest)
	if err != nil {
		h.Fail(w, r, err)
		return
	}
	f := source.PulledFile{Via: via, Provider: req.Provider, Version: req.Version, Sums: req.Index, File: fileKinds[req.File], Platform: req.Platform}
	if via == pullthrough.ViaRegistry {
		if f.RegistryHost, err = h.RegistryHostname(r); err != nil {
			h.Fail(w, r, err)
			return
		}
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
