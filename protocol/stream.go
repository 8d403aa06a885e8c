package protocol

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// streamZip streams a zip blob from the registry to the client. It never
// buffers the blob: memory per download is two 256 KiB buffers. The sha256
// and size are checked as the bytes pass; the last buffer is held back
// until the whole blob has verified, so on a mismatch the client never
// receives a complete file: the response is aborted (the connection or
// HTTP/2 stream is reset) and the client sees a broken download, never a
// silently wrong file.
func (s *Server) streamZip(w http.ResponseWriter, r *http.Request, rel *release, zip ocispec.Descriptor, name string) {
	if zip.Size < 0 || zip.Digest.Validate() != nil || zip.Digest.Algorithm() != "sha256" {
		s.fail(w, r, statusErr(http.StatusBadGateway, nil, "the platform manifest's zip layer has an invalid descriptor"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/zip")
	h.Set("Content-Length", itoa(zip.Size))
	h.Set("ETag", `"`+zip.Digest.String()+`"`)
	h.Set("Content-Disposition", `attachment; filename="`+name+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	s.cacheHeaders(w)
	if r.Method == http.MethodHead {
		return
	}

	// Stall detection: the stream is cancelled when neither the registry
	// nor the client made progress for StallTimeout.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stall := s.opts.StallTimeout
	timer := time.AfterFunc(stall, cancel)
	defer timer.Stop()

	rc, err := rel.repo.Fetch(ctx, zip)
	if err != nil {
		h.Del("Content-Length")
		h.Del("ETag")
		h.Del("Content-Disposition")
		s.fail(w, r, s.src.upstream(err, "fetching the package zip"))
		return
	}
	defer rc.Close()

	ctl := http.NewResponseController(w)
	abort := func(reason string, err error) {
		s.metrics.streamAborts.WithLabelValues(reason).Inc()
		if reason != "client" {
			s.metrics.upstreamError(reason)
		}
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "archive stream aborted",
			slog.String("reason", reason), slog.String("path", r.URL.EscapedPath()),
			slog.String("digest", zip.Digest.String()), slog.Any("error", err))
		panic(http.ErrAbortHandler)
	}

	bufA, bufB := bufPool.Get().(*[]byte), bufPool.Get().(*[]byte)
	defer bufPool.Put(bufA)
	defer bufPool.Put(bufB)
	cur, held := *bufA, (*bufB)[:0]
	hash := sha256.New()
	src := io.LimitReader(rc, zip.Size+1) // one byte more reveals an over-long blob
	var total int64
	write := func(b []byte) {
		if len(b) == 0 {
			return
		}
		ctl.SetWriteDeadline(time.Now().Add(stall))
		n, err := w.Write(b)
		s.metrics.bytesStreamed.Add(float64(n))
		if err != nil {
			abort("client", err)
		}
		timer.Reset(stall)
	}
	for {
		n, err := io.ReadFull(src, cur)
		if n > 0 {
			timer.Reset(stall)
			hash.Write(cur[:n])
			total += int64(n)
			if total > zip.Size {
				abort("size_mismatch", errors.New("the registry sent more bytes than the descriptor's size"))
			}
			write(held)
			held, cur = cur[:n], held[:cap(held)]
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			if ctx.Err() != nil && r.Context().Err() == nil {
				abort("timeout", err)
			}
			if r.Context().Err() != nil {
				abort("client", err)
			}
			abort("read", err)
		}
	}
	if total != zip.Size {
		abort("size_mismatch", errors.New("the registry sent "+itoa(total)+" bytes, the descriptor says "+itoa(zip.Size)))
	}
	if got := hex.EncodeToString(hash.Sum(nil)); got != zip.Digest.Encoded() {
		abort("digest_mismatch", errors.New("the blob's sha256 is "+got+", not the descriptor's "+zip.Digest.Encoded()))
	}
	write(held)
}
