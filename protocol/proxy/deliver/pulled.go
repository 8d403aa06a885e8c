package deliver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/oci-tofu/oci-tofu/protocol/ingest"
	"github.com/oci-tofu/oci-tofu/protocol/pullthrough"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// streamPulled serves a file while pull-through downloads it from the
// origin: it waits for the origin's answer (a failure before then is an
// ordinary error answer), then streams what has arrived and follows the
// download, so the client's first byte never waits for the whole file.
// The download's last chunk is released only once the file has verified;
// a digest mismatch, the origin breaking off, or no progress for
// StallTimeout aborts the response, so the client sees a broken transfer,
// never a wrong file.
func (s *Deliverer) streamPulled(w http.ResponseWriter, r *http.Request, g source.Download, file blobFile) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stall := s.StallTimeout
	timer := time.AfterFunc(stall, cancel)
	defer timer.Stop()

	size, err := g.Answer(ctx)
	if err != nil {
		s.Fail(w, r, pulledFileError(err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", file.contentType)
	if size >= 0 {
		h.Set("Content-Length", itoa(size))
	}
	h.Set("Content-Disposition", `attachment; filename="`+file.name+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	s.cacheHeaders(w, file.pinned)
	if r.Method == http.MethodHead {
		return
	}
	rd, err := g.Reader(ctx)
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	defer rd.Close()
	bufp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bufp)
	ctl := http.NewResponseController(w)
	for {
		n, rerr := rd.Read(*bufp)
		if n > 0 {
			timer.Reset(stall)
			ctl.SetWriteDeadline(time.Now().Add(stall))
			written, werr := w.Write((*bufp)[:n])
			s.Streamed.Add(float64(written))
			if werr != nil {
				s.abortPulled(r, g, "client", werr)
			}
			timer.Reset(stall)
		}
		switch {
		case rerr == io.EOF:
			return
		case rerr == nil:
		case r.Context().Err() != nil:
			s.abortPulled(r, g, "client", rerr)
		case ctx.Err() != nil:
			s.abortPulled(r, g, "timeout", rerr)
		case errors.Is(rerr, pullthrough.ErrDigestMismatch), errors.Is(rerr, ingest.ErrVerification):
			s.abortPulled(r, g, "digest_mismatch", rerr)
		default:
			s.abortPulled(r, g, "origin", rerr)
		}
	}
}

// abortPulled cuts a pulled file's response (net/http resets the stream).
func (s *Deliverer) abortPulled(r *http.Request, g source.Download, reason string, err error) {
	s.Aborts.WithLabelValues(reason).Inc()
	s.Log.LogAttrs(r.Context(), slog.LevelWarn, "pulled file stream aborted",
		slog.String("reason", reason), slog.String("path", r.URL.EscapedPath()),
		slog.String("file", g.Name()), slog.Any("error", err))
	panic(http.ErrAbortHandler)
}

// pulledFileError is what a client sees when the origin download failed
// before its answer began.
func pulledFileError(err error) error {
	switch pullthrough.Classify(err) {
	case pullthrough.FailureTampered:
		return newError(http.StatusBadGateway, err, "the origin's file failed verification against the signed SHA256SUMS and was not stored")
	case pullthrough.FailureNotFound:
		return newError(http.StatusBadGateway, err, "the origin does not have the file its registry named")
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return newError(http.StatusGatewayTimeout, err, "the origin did not answer in time")
	}
	return newError(http.StatusBadGateway, err, "downloading the file from the origin failed")
}
