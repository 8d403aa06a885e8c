package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/apparentlymart/go-versions/versions"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/sync/errgroup"

	"github.com/oci-tofu/oci-tofu/convert/wire"
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

// serveMirror answers the Provider Network Mirror Protocol.
func (s *Server) serveMirror(w http.ResponseWriter, r *http.Request) {
	if !allowRead(w, r) {
		return
	}
	escaped := r.URL.EscapedPath()
	s.serveDoc(w, r, escaped, func(ctx context.Context) (any, error) {
		req, err := ParseMirrorPath(strings.TrimPrefix(escaped, MirrorPrefix))
		if err != nil {
			return nil, err
		}
		if req.Index {
			list, err := s.src.versions(ctx, req.Provider)
			if err != nil {
				return nil, err
			}
			index := wire.MirrorIndex{Versions: make(map[string]struct{}, len(list))}
			for _, v := range list {
				index.Versions[v.String()] = struct{}{}
			}
			return index, nil
		}
		rel, err := s.src.release(ctx, req.Provider, req.Version)
		if err != nil {
			return nil, err
		}
		zips, err := s.src.allZips(ctx, rel)
		if err != nil {
			return nil, err
		}
		archives := make(map[string]wire.MirrorArchive, len(zips))
		for p, z := range zips {
			var hashes []string
			if h1 := rel.h1(p, z); h1 != "" {
				hashes = append(hashes, h1)
			}
			hashes = append(hashes, "zh:"+z.Digest.Encoded())
			archives[p.String()] = wire.MirrorArchive{
				URL:    mirrorToArchives + s.archiveRef(ctx, rel, zipName(rel.Provider.Type, rel.Version, p)),
				Hashes: hashes,
			}
		}
		return wire.MirrorVersion{Archives: archives}, nil
	})
}

// doc is an encoded metadata document, ready to write.
type doc struct {
	body   []byte
	length []string // Content-Length header value
}

// serveDoc answers the metadata document named by key (the request path,
// plus anything else the document depends on) from the document cache, or
// builds, caches and answers it. A cached document lives no longer than
// the time-limited cache entries it was derived from (tag lists and tag
// resolutions: TagTTL) and, with signed archive URLs, only while signing
// afresh would give the very same URLs (the same second); errors are never
// cached. A warm request thus does the same as a cold one would, minus the
// work.
func (s *Server) serveDoc(w http.ResponseWriter, r *http.Request, key string, build func(context.Context) (any, error)) {
	docs := s.documents()
	if d, ok := docs.get(key); ok {
		docs.count(docs.hits)
		writeDoc(w, r, d)
		return
	}
	docs.count(docs.misses)
	ctx, exp := withExpiry(r.Context())
	if s.urls != nil {
		exp.at = s.urls.now()
	}
	v, err := build(ctx)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "encoding the response failed")
		return
	}
	b = append(b, '\n')
	d := doc{body: b, length: []string{itoa(int64(len(b)))}}
	docs.addUntil(key, d, exp.until())
	writeDoc(w, r, d)
}

// documents is the document cache: as many entries and the same TTL as
// the tag caches, on the URL signer's clock when archive URLs are signed.
func (s *Server) documents() *cache[doc] {
	s.src.docsOnce.Do(func() {
		c := newCache[doc]("documents", s.src.tags.max, s.src.tags.ttl, s.metrics)
		if u := s.urls; u != nil {
			c.now = func() time.Time { return u.now() }
		}
		s.src.docs = c
	})
	return s.src.docs
}

var (
	headerJSON    = []string{"application/json"}
	headerNoStore = []string{"no-store"}
)

// writeDoc writes an encoded JSON document as writeJSON does.
func writeDoc(w http.ResponseWriter, r *http.Request, d doc) {
	h := w.Header()
	h["Content-Type"] = headerJSON
	h["Content-Length"] = d.length
	h["Cache-Control"] = headerNoStore
	if r.Method == http.MethodHead {
		return
	}
	w.Write(d.body)
}

// archiveRef is an archive's path below ArchivePrefix, signed when client
// authentication is on, as of the signing time of the document being built
// (ctx), which then expires when the signature would change.
func (s *Server) archiveRef(ctx context.Context, rel *release, file string) string {
	p := archivePath(rel.Provider, rel.Version, rel.pv.Index.Digest, file)
	if s.urls == nil {
		return p
	}
	e := expiryFrom(ctx)
	at := s.urls.now()
	if e != nil && !e.at.IsZero() {
		at = e.at
	}
	q, same := s.urls.signAt(ArchivePrefix+p, at)
	e.observe(same)
	return p + "?" + q
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
	s.serveDoc(w, r, host+" "+r.URL.EscapedPath(), func(ctx context.Context) (any, error) {
		if !req.Download {
			return s.versionsDoc(ctx, p)
		}
		return s.downloadDoc(ctx, p, req)
	})
}

func (s *Server) downloadDoc(ctx context.Context, p Provider, req RegistryRequest) (any, error) {
	rel, err := s.src.release(ctx, p, req.Version)
	if err != nil {
		return nil, err
	}
	if _, ok := rel.pv.Platforms[req.Platform]; !ok {
		return nil, notFound("provider %s %s has no package for %s", p, req.Version, req.Platform)
	}
	if !s.src.registryCapable(rel) {
		return nil, errUnsigned(rel)
	}
	zip, err := s.src.zip(ctx, rel, req.Platform)
	if err != nil {
		return nil, err
	}
	cs, err := s.src.checksums(ctx, rel)
	if err != nil {
		return nil, err
	}
	name, err := cs.checkListed(rel, req.Platform, zip.Digest.Encoded())
	if err != nil {
		return nil, err
	}
	sums := sumsName(p.Type, req.Version)
	d := wire.RegistryDownload{
		Protocols:           rel.protocols(),
		OS:                  req.Platform.OS,
		Arch:                req.Platform.Arch,
		Filename:            name,
		DownloadURL:         registryToArchives + s.archiveRef(ctx, rel, zipName(p.Type, req.Version, req.Platform)),
		SHASumsURL:          registryToArchives + s.archiveRef(ctx, rel, sums),
		SHASumsSignatureURL: registryToArchives + s.archiveRef(ctx, rel, sums+".sig"),
		SHASum:              zip.Digest.Encoded(),
	}
	d.SigningKeys.GPGPublicKeys = cs.keys
	return d, nil
}

// serveVersions lists the versions the registry protocol can offer, with
// their protocols and platforms. Versions it cannot offer (no publisher
// signature and no --signing-key, or artifacts OpenTofu would refuse) are
// left out and explained in "warnings", which OpenTofu prints.
func (s *Server) versionsDoc(ctx context.Context, p Provider) (any, error) {
	list, err := s.src.versions(ctx, p)
	if err != nil {
		return nil, err
	}
	out := make([]*wire.RegistryVersion, len(list))
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
			rv := &wire.RegistryVersion{Version: v.String(), Protocols: rel.protocols()}
			for _, pl := range rel.platforms() {
				rv.Platforms = append(rv.Platforms, wire.RegistryPlatform{OS: pl.OS, Arch: pl.Arch})
			}
			out[i] = rv
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	resp := wire.RegistryVersions{Versions: []*wire.RegistryVersion{}}
	for i := range list {
		if out[i] != nil {
			resp.Versions = append(resp.Versions, out[i])
		}
		if warn[i] != "" {
			resp.Warnings = append(resp.Warnings, warn[i])
		}
	}
	return resp, nil
}

// archivePath admits a GET or HEAD of an archive URL handed out in metadata
// (checking its signature when client authentication is on) and returns
// the escaped path after prefix; otherwise it has answered the request.
func (s *Server) archivePath(w http.ResponseWriter, r *http.Request, prefix string) (string, bool) {
	if !allowRead(w, r) {
		return "", false
	}
	escaped := r.URL.EscapedPath()
	if s.urls != nil {
		if err := s.urls.verify(escaped, r.URL.Query()); err != nil {
			s.fail(w, r, err)
			return "", false
		}
	}
	return strings.TrimPrefix(escaped, prefix), true
}

// serveArchive serves a zip, SHA256SUMS or signature named by a URL from
// the metadata.
func (s *Server) serveArchive(w http.ResponseWriter, r *http.Request) {
	rest, ok := s.archivePath(w, r, ArchivePrefix)
	if !ok {
		return
	}
	req, err := ParseArchivePath(rest)
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
