package respond

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Deliver answers with a blob a source handed over: a layer the registry
// holds, streamed and verified (or redirected to storage: stream.go), a
// file pull-through is downloading (pulled_stream.go), or bytes in memory.
func (s *Responder) Deliver(w http.ResponseWriter, r *http.Request, b *source.Blob) {
	file := blobFile{name: b.Name, contentType: b.ContentType, pinned: b.Pinned}
	switch {
	case b.Pulling != nil:
		s.streamPulled(w, r, b.Pulling, file)
	case b.Repo != nil:
		s.serveBlob(w, r, b.Repo, b.Layer, file)
	default:
		s.writeSmallFile(w, r, b.Data, b.ContentType)
	}
}

// LeftOut is nil when a listing may leave out version v (of what, named)
// for err — it is denied, gone, or not a valid artifact of its kind —,
// logging why; otherwise err, which fails the listing.
func (s *Responder) LeftOut(what string, v names.Version, err error) error {
	if err == nil {
		return nil
	}
	var d *source.Denied
	switch {
	case errors.As(err, &d):
		s.Log.Info("version left out", "what", what, "version", v.String(), "rule", d.Rule, "reason", d.Reason)
		return nil
	case source.Absent(err), store.Skippable(err):
		return nil
	}
	return err
}

// writeSmallFile answers a small file held in memory.
func (s *Responder) writeSmallFile(w http.ResponseWriter, r *http.Request, body []byte, ctype string) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	s.cacheHeaders(w, true)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// cacheHeaders says how long HTTP caches may keep a file: files pinned to
// a digest never change, unless the URL is a signed, private one.
func (s *Responder) cacheHeaders(w http.ResponseWriter, pinned bool) {
	switch {
	case s.URLs != nil:
		w.Header().Set("Cache-Control", "private, no-store")
	case pinned:
		w.Header().Set("Cache-Control", "public, max-age=86400, immutable")
	default:
		// Named by version, not digest: a re-pushed release must not be
		// served stale from HTTP caches.
		w.Header().Set("Cache-Control", "no-cache")
	}
}
