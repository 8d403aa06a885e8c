package protocol

import (
	"errors"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/apparentlymart/go-versions/versions"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/oci"
)

type (
	versionsList = versions.List
	descriptor   = ocispec.Descriptor
)

func pathMatchImpl(pattern, addr string) (bool, error) { return path.Match(pattern, addr) }

// Relative URLs from the metadata documents to the archive prefix:
// /v1/mirror/:hostname/:namespace/:type/:version.json and
// /v1/providers/:namespace/:type/:version/download/:os/:arch.
const (
	mirrorToArchives   = "../../../../archives/"
	registryToArchives = "../../../../../../archives/"
)

type mirrorArchive struct {
	URL    string   `json:"url"`
	Hashes []string `json:"hashes"`
}

// serveMirror answers the Provider Network Mirror Protocol.
func (s *Server) serveMirror(w http.ResponseWriter, r *http.Request) {
	if !allowRead(w, r) {
		return
	}
	req, err := ParseMirrorPath(strings.TrimPrefix(r.URL.EscapedPath(), MirrorPrefix))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	if req.Index {
		list, err := s.src.versions(ctx, req.Provider)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		vs := make(map[string]struct{}, len(list))
		for _, v := range list {
			vs[v.String()] = struct{}{}
		}
		writeJSON(w, r, map[string]any{"versions": vs})
		return
	}
	rel, err := s.src.release(ctx, req.Provider, req.Version)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	zips, err := s.src.allZips(ctx, rel)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	archives := make(map[string]mirrorArchive, len(zips))
	for p, z := range zips {
		var hashes []string
		if h1 := rel.h1(p, z); h1 != "" {
			hashes = append(hashes, h1)
		}
		hashes = append(hashes, "zh:"+z.Digest.Encoded())
		archives[p.String()] = mirrorArchive{
			URL:    mirrorToArchives + s.archiveRef(rel, zipName(rel.Provider.Type, rel.Version, p)),
			Hashes: hashes,
		}
	}
	writeJSON(w, r, map[string]any{"archives": archives})
}

// archiveRef is an archive's path below ArchivePrefix, signed when client
// authentication is on.
func (s *Server) archiveRef(rel *release, file string) string {
	p := archivePath(rel.Provider, rel.Version, rel.pv.Index.Digest, file)
	if s.urls != nil {
		return p + "?" + s.urls.sign(ArchivePrefix+p)
	}
	return p
}

// registryHostname is the ${hostname} of providers served through the
// registry protocol.
func (s *Server) registryHostname(r *http.Request) (string, error) {
	if s.opts.RegistryHostname != "" {
		return s.opts.RegistryHostname, nil
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return parseHostname(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
}

type registryPlatform struct {
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

type registryVersion struct {
	Version   string             `json:"version"`
	Protocols []string           `json:"protocols"`
	Platforms []registryPlatform `json:"platforms"`
}

type registryDownload struct {
	Protocols           []string `json:"protocols"`
	OS                  string   `json:"os"`
	Arch                string   `json:"arch"`
	Filename            string   `json:"filename"`
	DownloadURL         string   `json:"download_url"`
	SHASumsURL          string   `json:"shasums_url"`
	SHASumsSignatureURL string   `json:"shasums_signature_url"`
	SHASum              string   `json:"shasum"`
	SigningKeys         struct {
		GPGPublicKeys []gpgKey `json:"gpg_public_keys"`
	} `json:"signing_keys"`
}

// serveRegistry answers the Provider Registry Protocol, the proxy being
// the origin registry of its providers.
func (s *Server) serveRegistry(w http.ResponseWriter, r *http.Request) {
	if !allowRead(w, r) {
		return
	}
	req, err := ParseRegistryPath(strings.TrimPrefix(r.URL.EscapedPath(), ProvidersPath))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	host, err := s.registryHostname(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	p := Provider{Hostname: host, Namespace: req.Namespace, Type: req.Type}
	if !req.Download {
		s.serveVersions(w, r, p)
		return
	}
	ctx := r.Context()
	rel, err := s.src.release(ctx, p, req.Version)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if _, ok := rel.pv.Platforms[req.Platform]; !ok {
		s.fail(w, r, notFound("provider %s %s has no package for %s", p, req.Version, req.Platform))
		return
	}
	if !s.src.registryCapable(rel) {
		s.fail(w, r, errUnsigned(rel))
		return
	}
	zip, err := s.src.zip(ctx, rel, req.Platform)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	cs, err := s.src.checksums(ctx, rel)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	name, err := cs.checkListed(rel, req.Platform, zip.Digest.Encoded())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	sums := sumsName(p.Type, req.Version)
	d := registryDownload{
		Protocols:           rel.protocols(),
		OS:                  req.Platform.OS,
		Arch:                req.Platform.Arch,
		Filename:            name,
		DownloadURL:         registryToArchives + s.archiveRef(rel, zipName(p.Type, req.Version, req.Platform)),
		SHASumsURL:          registryToArchives + s.archiveRef(rel, sums),
		SHASumsSignatureURL: registryToArchives + s.archiveRef(rel, sums+".sig"),
		SHASum:              zip.Digest.Encoded(),
	}
	d.SigningKeys.GPGPublicKeys = cs.keys
	writeJSON(w, r, d)
}

// serveVersions lists the versions the registry protocol can offer, with
// their protocols and platforms. Versions it cannot offer (no publisher
// signature and no --signing-key, or artifacts OpenTofu would refuse) are
// left out and explained in "warnings", which OpenTofu prints.
func (s *Server) serveVersions(w http.ResponseWriter, r *http.Request, p Provider) {
	ctx := r.Context()
	list, err := s.src.versions(ctx, p)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := make([]*registryVersion, len(list))
	warn := make([]string, len(list))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i, v := range list {
		g.Go(func() error {
			rel, err := s.src.release(gctx, p, v)
			var he *httpError
			switch {
			case err == nil:
			case errors.As(err, &he) && he.status == http.StatusNotFound:
				return nil // tag removed since listing
			case errors.Is(err, oci.ErrInvalidArtifact):
				warn[i] = v.String() + " is left out: its OCI artifact is not a valid provider"
				return nil
			default:
				return err
			}
			if !s.src.registryCapable(rel) {
				warn[i] = v.String() + " is left out: it has no publisher signature and the proxy no signing key (use the network mirror for it)"
				return nil
			}
			rv := &registryVersion{Version: v.String(), Protocols: rel.protocols()}
			for _, pl := range rel.platforms() {
				rv.Platforms = append(rv.Platforms, registryPlatform{OS: pl.OS, Arch: pl.Arch})
			}
			out[i] = rv
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		s.fail(w, r, err)
		return
	}
	resp := struct {
		Versions []*registryVersion `json:"versions"`
		Warnings []string           `json:"warnings,omitempty"`
	}{Versions: []*registryVersion{}}
	for i := range list {
		if out[i] != nil {
			resp.Versions = append(resp.Versions, out[i])
		}
		if warn[i] != "" {
			resp.Warnings = append(resp.Warnings, warn[i])
		}
	}
	writeJSON(w, r, resp)
}

// serveArchive serves a zip, SHA256SUMS or signature named by a URL from
// the metadata.
func (s *Server) serveArchive(w http.ResponseWriter, r *http.Request) {
	if !allowRead(w, r) {
		return
	}
	escaped := r.URL.EscapedPath()
	if s.urls != nil {
		if err := s.urls.verify(escaped, r.URL.Query()); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	req, err := ParseArchivePath(strings.TrimPrefix(escaped, ArchivePrefix))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	ctx := r.Context()
	rel, err := s.src.releaseAt(ctx, req.Provider, req.Version, req.Index)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	switch req.File {
	case ArchiveZip:
		zip, err := s.src.zip(ctx, rel, req.Platform)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		s.streamZip(w, r, rel, zip, zipName(rel.Provider.Type, rel.Version, req.Platform))
	case ArchiveSHA256SUMS, ArchiveSignature:
		if !s.src.registryCapable(rel) {
			s.fail(w, r, errUnsigned(rel))
			return
		}
		cs, err := s.src.checksums(ctx, rel)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		body, ctype := cs.data, "text/plain; charset=utf-8"
		if req.File == ArchiveSignature {
			body, ctype = cs.signature, "application/octet-stream"
		}
		w.Header().Set("Content-Type", ctype)
		w.Header().Set("Content-Length", itoa(int64(len(body))))
		s.cacheHeaders(w)
		if r.Method == http.MethodHead {
			return
		}
		w.Write(body)
	}
}

func (s *Server) cacheHeaders(w http.ResponseWriter) {
	if s.urls != nil {
		w.Header().Set("Cache-Control", "private, no-store")
	} else {
		// Pinned to an index digest: the content never changes.
		w.Header().Set("Cache-Control", "public, max-age=86400, immutable")
	}
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}
