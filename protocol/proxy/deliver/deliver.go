// Package deliver hands a client the blob a source answered with,
// verified as it passes: a layer the registry holds, streamed through
// pooled buffers (inline over HTTP/1.1, pipelined over HTTP/2) with the
// last buffer held back until the digest and size check out, or a
// redirect to the storage the registry redirects to; a file pull-through
// is downloading, released as it verifies; or bytes in memory. A
// mismatch cuts the response: the client sees a broken download, never a
// wrong file.
package deliver

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// Deliverer delivers blobs for one server.
type Deliverer struct {
	// StallTimeout aborts a stream that makes no progress, from the
	// registry or to the client, for this long.
	StallTimeout time.Duration
	// Redirect hands out the storage URL a registry redirects a blob's
	// download to, instead of streaming it.
	Redirect bool
	// Private: the URLs are signed for one client, so HTTP caches must
	// not keep what they answer.
	Private bool
	Log     *slog.Logger
	Counters
	// Fail answers a request with err (before any of the blob is sent).
	Fail func(w http.ResponseWriter, r *http.Request, err error)
}

// Counters are the delivery's metrics.
type Counters struct {
	Streamed  prometheus.Counter     // bytes sent to clients
	Redirects prometheus.Counter     // blobs handed out as storage URLs
	Aborts    *prometheus.CounterVec // streams cut, by reason
	// Upstream counts a registry failure by class.
	Upstream func(class string)
}

// Error is a delivery's failure before the blob began: the status and
// what the client is told (err stays in the logs).
type Error struct {
	Status int
	Msg    string
	Err    error
}

func (e *Error) Error() string {
	if e.Err == nil {
		return e.Msg
	}
	return e.Msg + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

func newError(status int, err error, format string, args ...any) error {
	return &Error{Status: status, Msg: fmt.Sprintf(format, args...), Err: err}
}

// Deliver answers with a blob a source handed over: a layer the registry
// holds, streamed and verified (or redirected to storage: stream.go), a
// file pull-through is downloading (pulled.go), or bytes in memory.
func (s *Deliverer) Deliver(w http.ResponseWriter, r *http.Request, b *source.Blob) {
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

// writeSmallFile answers a small file held in memory.
func (s *Deliverer) writeSmallFile(w http.ResponseWriter, r *http.Request, body []byte, ctype string) {
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	s.cacheHeaders(w, true)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// cacheHeaders says how long HTTP caches may keep a file: files pinned to
// a digest never change, unless the URL is a signed, private one.
func (s *Deliverer) cacheHeaders(w http.ResponseWriter, pinned bool) {
	switch {
	case s.Private:
		w.Header().Set("Cache-Control", "private, no-store")
	case pinned:
		w.Header().Set("Cache-Control", "public, max-age=86400, immutable")
	default:
		// Named by version, not digest: a re-pushed release must not be
		// served stale from HTTP caches.
		w.Header().Set("Cache-Control", "no-cache")
	}
}
