// Package tofudl serves OpenTofu releases as a TofuDL mirror: the API
// document and the release files, streamed verified. It renders what its
// source.Tofu answers and answers through respond.
package tofudl

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// TofuDL mirror paths: the API document and the download URL template's
// base (https://HOST/tofu/download/v{{ .Version }}/{{ .Artifact }}).
const (
	APIPath        = "/tofu/api.json"
	DownloadPrefix = "/tofu/download/"
)

// Handlers serve OpenTofu releases as a TofuDL mirror, rendering
// what their source answers.
type Handlers struct {
	*respond.Responder
	source source.Tofu
}

// New is the TofuDL handlers answering with out from src.
func New(out *respond.Responder, src source.Tofu) *Handlers {
	return &Handlers{Responder: out, source: src}
}

// ServeAPI answers api.json: every release, newest first.
func (t *Handlers) ServeAPI(w http.ResponseWriter, r *http.Request) {
	if !respond.AllowRead(w, r) {
		return
	}
	if r.URL.EscapedPath() != APIPath {
		t.Fail(w, r, source.NotFoundf("no such document"))
		return
	}
	if !t.InScope(w, r, respond.ReaderOf(r.Context()), names.KindTofu, "") {
		return
	}
	t.ServeDoc(w, r, APIPath, t.apiDoc)
}

// ServeDownload streams one release file, verifying its digest as it
// streams (a mismatch aborts the response).
func (t *Handlers) ServeDownload(w http.ResponseWriter, r *http.Request) {
	req, ok := respond.ReadRequest(t.Responder, w, r, DownloadPrefix, ParseTofuDownloadPath)
	if !ok || !t.InScope(w, r, respond.ReaderOf(r.Context()), names.KindTofu, "") {
		return
	}
	respond.EventOf(r.Context()).Serving(respond.Artifact{Kind: names.KindTofu, Address: "opentofu", Version: req.Version.String(), File: req.Artifact})
	blob, err := t.source.OpenTofuFile(r.Context(), req.Version, req.Artifact)
	if err != nil {
		t.Fail(w, r, err)
		return
	}
	t.Deliver(w, r, blob)
}

// apiDoc is api.json: every release the source lists and can read,
// newest first. A release that is denied, gone, or not a valid release
// artifact is left out (logged); a failure to read fails the document.
func (t *Handlers) apiDoc(ctx context.Context) (any, time.Time, error) {
	l, err := t.source.TofuVersions(ctx)
	if err != nil {
		return nil, l.At, err
	}
	vs := make(names.VersionList, len(l.Versions))
	for i, e := range l.Versions {
		vs[i] = e.Version
	}
	rels := make([]*source.TofuEntry, len(vs))
	err = t.Store.EachVersion(ctx, vs, func(ctx context.Context, i int, v names.Version) error {
		rel, err := t.source.TofuRelease(ctx, v)
		rels[i] = rel // each index by one goroutine
		return t.LeftOut("OpenTofu", v, err)
	})
	if err != nil {
		return nil, l.At, err
	}
	doc := wire.TofuAPI{Versions: []wire.TofuVersion{}}
	for _, rel := range rels {
		if rel != nil {
			doc.Versions = append(doc.Versions, wire.TofuVersion{ID: rel.Version.String(), Files: rel.Files})
		}
	}
	sortTofuVersions(doc.Versions)
	ids := make([]string, len(doc.Versions))
	for i, v := range doc.Versions {
		ids[i] = v.ID
	}
	t.Observer.TofuListed(ids)
	return doc, l.At, nil
}

// sortTofuVersions orders api.json's versions newest first.
func sortTofuVersions(vs []wire.TofuVersion) {
	sort.SliceStable(vs, func(i, j int) bool { return names.CompareTofuVersions(vs[i].ID, vs[j].ID) > 0 })
}
