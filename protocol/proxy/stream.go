package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/store"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Streaming buffers: streamBuffers buffers of streamBufferSize per
// download in flight (1 MiB), from a pool.
const (
	streamBufferSize = 256 << 10
	streamBuffers    = 4
)

var bufPool = sync.Pool{New: func() any { b := make([]byte, streamBufferSize); return &b }}

// chunk is a buffer read from the registry and hashed, on its way to the
// client.
type chunk struct {
	buf *[]byte
	n   int
}

// blobFile says how a streamed blob is presented to the client.
type blobFile struct {
	name        string // the download's file name
	contentType string
	// pinned: the URL names the blob's digest (directly or through an
	// index), so HTTP caches may keep it.
	pinned bool
}

// serveBlob streams a blob from the registry to the client. It never
// buffers the blob: memory per download is streamBuffers buffers of
// streamBufferSize. A reader goroutine reads and hashes the registry's
// bytes while the handler writes earlier buffers to the client, so the two
// connections are served at once. The sha256 and size are checked as the
// bytes pass; the last buffer is held back until the whole blob has
// verified, so on a mismatch the client never receives a complete file:
// the response is aborted (the connection or HTTP/2 stream is reset) and
// the client sees a broken download, never a silently wrong file.
func (s *Server) serveBlob(w http.ResponseWriter, r *http.Request, repo *store.Repo, zip ocispec.Descriptor, file blobFile) {
	if zip.Size < 0 || zip.Size > oci.MaxPackageSize || zip.Digest.Validate() != nil || zip.Digest.Algorithm() != "sha256" {
		s.fail(w, r, statusErr(http.StatusBadGateway, nil, "the artifact's layer has an invalid descriptor (digest %q, %d bytes)", zip.Digest, zip.Size))
		return
	}
	h := w.Header()
	h.Set("Content-Type", file.contentType)
	h.Set("Content-Length", itoa(zip.Size))
	h.Set("ETag", `"`+zip.Digest.String()+`"`)
	h.Set("Content-Disposition", `attachment; filename="`+file.name+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	s.cacheHeaders(w, file.pinned)
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

	rc, err := repo.Fetch(ctx, zip)
	if err != nil {
		h.Del("Content-Length")
		h.Del("ETag")
		h.Del("Content-Disposition")
		h.Del("Cache-Control")
		if ctx.Err() != nil && r.Context().Err() == nil {
			// The stall timer, not the client, gave up.
			err = statusErr(http.StatusGatewayTimeout, err, "the OCI registry did not start sending the blob within %s", stall)
		}
		s.fail(w, r, err)
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

	// The reader: buffers come from free, go back full on full; closing
	// full ends the stream, with readErr and readReason set before.
	free := make(chan *[]byte, streamBuffers)
	full := make(chan chunk, streamBuffers)
	for i := 0; i < streamBuffers; i++ {
		free <- bufPool.Get().(*[]byte)
	}
	var (
		readErr    error
		readReason string
		total      int64
	)
	hash := sha256.New()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(full)
		defer func() {
			// The recovery boundary of the reader: a panic ends this
			// download, not the process.
			if p := recover(); p != nil {
				readErr, readReason = &cache.PanicError{Value: p, Stack: debug.Stack()}, "internal"
			}
		}()
		src := io.LimitReader(rc, zip.Size+1) // one byte more reveals an over-long blob
		for {
			var buf *[]byte
			select {
			case buf = <-free:
			case <-ctx.Done():
				readErr, readReason = ctx.Err(), "cancelled"
				return
			}
			n, err := io.ReadFull(src, *buf)
			if n > 0 {
				timer.Reset(stall)
				hash.Write((*buf)[:n])
				total += int64(n)
				if total > zip.Size {
					readErr, readReason = errors.New("the registry sent more bytes than the descriptor's size"), "size_mismatch"
					free <- buf
					return
				}
				full <- chunk{buf, n} // never blocks: as many slots as buffers
			} else {
				free <- buf
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return
			}
			if err != nil {
				readErr, readReason = err, "read"
				return
			}
		}
	}()
	defer func() {
		// Stop the reader (cancel runs first if we abort) and pool its buffers.
		cancel()
		rc.Close()
		<-done
		for c := range full {
			bufPool.Put(c.buf)
		}
		for {
			select {
			case b := <-free:
				bufPool.Put(b)
			default:
				return // a buffer the handler held when it aborted is left to the GC
			}
		}
	}()

	write := func(c chunk) {
		ctl.SetWriteDeadline(time.Now().Add(stall))
		n, err := w.Write((*c.buf)[:c.n])
		s.metrics.bytesStreamed.Add(float64(n))
		if err != nil {
			abort("client", err)
		}
		timer.Reset(stall)
		free <- c.buf
	}
	var held chunk
	for c := range full {
		if held.buf != nil {
			write(held)
		}
		held = c
	}
	// full is closed: the reader is done and its results are visible.
	if readErr != nil {
		switch {
		case readReason == "size_mismatch", readReason == "internal":
			abort(readReason, readErr)
		case r.Context().Err() != nil:
			abort("client", readErr)
		case ctx.Err() != nil:
			abort("timeout", readErr)
		}
		abort("read", readErr)
	}
	if total != zip.Size {
		abort("size_mismatch", errors.New("the registry sent "+itoa(total)+" bytes, the descriptor says "+itoa(zip.Size)))
	}
	if got := hex.EncodeToString(hash.Sum(nil)); got != zip.Digest.Encoded() {
		abort("digest_mismatch", errors.New("the blob's sha256 is "+got+", not the descriptor's "+zip.Digest.Encoded()))
	}
	if held.buf != nil {
		write(held)
	}
}
