package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/store"
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
func (s *responder) serveBlob(w http.ResponseWriter, r *http.Request, repo *store.Repo, zip ocispec.Descriptor, file blobFile) {
	if !validLayer(zip) {
		s.fail(w, r, statusErr(http.StatusBadGateway, nil, "the artifact's layer has an invalid descriptor (digest %q, %d bytes)", zip.Digest, zip.Size))
		return
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if r.Method == http.MethodHead {
		s.blobHeaders(w, zip, file)
		return
	}
	st, loc, err := s.openBlobStream(r, repo, zip)
	switch {
	case loc != "":
		s.redirectToStorage(w, r, loc)
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	defer st.close()
	s.blobHeaders(w, zip, file)
	st.startReader()
	st.deliver(w)
}

// blobHeaders describe the blob a response carries: set only once it is
// known to be answered with the blob (HEAD, or a stream opened), so an
// error or a redirect carries none of them.
func (s *responder) blobHeaders(w http.ResponseWriter, zip ocispec.Descriptor, file blobFile) {
	setBlobHeaders(w.Header(), zip, file)
	s.cacheHeaders(w, file.pinned)
}

// validLayer: a sha256 digest and a size within oci.MaxPackageSize.
func validLayer(zip ocispec.Descriptor) bool {
	return zip.Size >= 0 && zip.Size <= oci.MaxPackageSize && zip.Digest.Validate() == nil && zip.Digest.Algorithm() == "sha256"
}

func setBlobHeaders(h http.Header, zip ocispec.Descriptor, file blobFile) {
	h.Set("Content-Type", file.contentType)
	h.Set("Content-Length", itoa(zip.Size))
	h.Set("ETag", `"`+zip.Digest.String()+`"`)
	h.Set("Content-Disposition", `attachment; filename="`+file.name+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
}

// blobStream is one blob on its way from the registry to one client.
type blobStream struct {
	s   *responder
	r   *http.Request
	zip ocispec.Descriptor
	rc  io.ReadCloser

	// Stall detection: ctx is cancelled when neither the registry nor the
	// client made progress for stall.
	ctx    context.Context
	cancel context.CancelFunc
	stall  time.Duration
	timer  *time.Timer

	// Buffers come from free and go back full on full; the reader closes
	// full, and done, when it stops, with what it found set before.
	done       chan struct{}
	bufs       chan *[]byte
	full       chan chunk
	hash       hash.Hash
	total      int64
	readErr    error
	readReason string
}

// openBlobStream starts fetching the blob, bounded by the stall timeout;
// with RedirectArchives, it returns the storage URL instead when the
// registry redirects the blob's download.
func (s *responder) openBlobStream(r *http.Request, repo *store.Repo, zip ocispec.Descriptor) (*blobStream, string, error) {
	st := &blobStream{s: s, r: r, zip: zip, stall: s.opts.StallTimeout, hash: sha256.New()}
	st.ctx, st.cancel = context.WithCancel(r.Context())
	st.timer = time.AfterFunc(st.stall, st.cancel)
	loc, rc, err := s.fetchBlob(st.ctx, repo, zip)
	if err != nil || loc != "" {
		stalled := !st.timer.Stop() // the timer fired: it cancelled the fetch
		st.cancel()
		if err != nil && stalled && r.Context().Err() == nil {
			// The stall timer, not the client, gave up.
			err = statusErr(http.StatusGatewayTimeout, err, "the OCI registry did not start sending the blob within %s", st.stall)
		}
		return nil, loc, err
	}
	st.rc = rc
	return st, "", nil
}

// fetchBlob opens the blob, or with RedirectArchives locates its storage.
func (s *responder) fetchBlob(ctx context.Context, repo *store.Repo, zip ocispec.Descriptor) (string, io.ReadCloser, error) {
	if s.opts.RedirectArchives {
		return repo.FetchOrLocate(ctx, zip)
	}
	rc, err := repo.Fetch(ctx, zip)
	return "", rc, err
}

// redirectToStorage sends the client to the storage holding the archive.
// The client checks what it downloads against the hashes of the proxy's
// documents and its lock file; the URL, presigned by the registry, carries
// no credential of the proxy's (docs/security.md).
func (s *responder) redirectToStorage(w http.ResponseWriter, r *http.Request, loc string) {
	w.Header().Set("Cache-Control", "no-store") // presigned URLs expire
	s.metrics.archiveRedirects.Inc()
	http.Redirect(w, r, loc, http.StatusTemporaryRedirect)
}

// startReader fills the buffers from the registry in a goroutine.
func (st *blobStream) startReader() {
	st.bufs = make(chan *[]byte, streamBuffers)
	st.full = make(chan chunk, streamBuffers)
	st.done = make(chan struct{})
	for i := 0; i < streamBuffers; i++ {
		st.bufs <- bufPool.Get().(*[]byte)
	}
	go st.read()
}

// read is the reader goroutine: it reads, hashes and counts the registry's
// bytes, at most one byte more than the descriptor's size (which reveals
// an over-long blob).
func (st *blobStream) read() {
	defer close(st.done)
	defer close(st.full)
	// The recovery boundary of the reader: a panic ends this download,
	// not the process.
	if err := cache.Recover(st.readAll); err != nil {
		st.readErr, st.readReason = err, "internal"
	}
}

// readAll fills buffers until the stream ends, recording why it ended.
func (st *blobStream) readAll() error {
	src := io.LimitReader(st.rc, st.zip.Size+1)
	for {
		var buf *[]byte
		select {
		case buf = <-st.bufs:
		case <-st.ctx.Done():
			st.readErr, st.readReason = st.ctx.Err(), "cancelled"
			return nil
		}
		if !st.fill(src, buf) {
			return nil
		}
	}
}

// fill reads one buffer and passes it on; false when the stream ended.
func (st *blobStream) fill(src io.Reader, buf *[]byte) bool {
	n, err := io.ReadFull(src, *buf)
	if n == 0 {
		st.bufs <- buf
	} else {
		st.timer.Reset(st.stall)
		st.hash.Write((*buf)[:n])
		st.total += int64(n)
		if st.total > st.zip.Size {
			st.readErr, st.readReason = errors.New("the registry sent more bytes than the descriptor's size"), "size_mismatch"
			st.bufs <- buf
			return false
		}
		st.full <- chunk{buf, n} // never blocks: as many slots as buffers
	}
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return false
	case err != nil:
		st.readErr, st.readReason = err, "read"
		return false
	}
	return true
}

// deliver writes the buffers to the client as they fill, holding the last
// one back until the blob has verified; otherwise it aborts the response.
func (st *blobStream) deliver(w http.ResponseWriter) {
	ctl := http.NewResponseController(w)
	var held chunk
	for c := range st.full {
		if held.buf != nil {
			st.write(w, ctl, held)
		}
		held = c
	}
	// full is closed: the reader is done and its results are visible.
	if reason, err := st.verdict(); err != nil {
		st.abort(reason, err)
	}
	if held.buf != nil {
		st.write(w, ctl, held)
	}
}

// verdict is why the stream failed, once the reader is done: a read
// error, a size or a digest that does not match; nil when it verified.
func (st *blobStream) verdict() (string, error) {
	if st.readErr != nil {
		switch {
		case st.readReason == "size_mismatch", st.readReason == "internal":
			return st.readReason, st.readErr
		case st.r.Context().Err() != nil:
			return "client", st.readErr
		case st.ctx.Err() != nil:
			return "timeout", st.readErr
		}
		return "read", st.readErr
	}
	if st.total != st.zip.Size {
		return "size_mismatch", errors.New("the registry sent " + itoa(st.total) + " bytes, the descriptor says " + itoa(st.zip.Size))
	}
	if got := hex.EncodeToString(st.hash.Sum(nil)); got != st.zip.Digest.Encoded() {
		return "digest_mismatch", errors.New("the blob's sha256 is " + got + ", not the descriptor's " + st.zip.Digest.Encoded())
	}
	return "", nil
}

// write sends one buffer to the client and returns it to the reader.
func (st *blobStream) write(w http.ResponseWriter, ctl *http.ResponseController, c chunk) {
	ctl.SetWriteDeadline(time.Now().Add(st.stall))
	n, err := w.Write((*c.buf)[:c.n])
	st.s.metrics.bytesStreamed.Add(float64(n))
	if err != nil {
		st.abort("client", err)
	}
	st.timer.Reset(st.stall)
	st.bufs <- c.buf
}

// abort counts and logs why the stream failed and aborts the response.
func (st *blobStream) abort(reason string, err error) {
	st.s.metrics.streamAborts.WithLabelValues(reason).Inc()
	if reason != "client" {
		st.s.metrics.upstreamError(reason)
	}
	st.s.log.LogAttrs(st.r.Context(), slog.LevelWarn, "archive stream aborted",
		slog.String("reason", reason), slog.String("path", st.r.URL.EscapedPath()),
		slog.String("digest", st.zip.Digest.String()), slog.Any("error", err))
	panic(http.ErrAbortHandler)
}

// close stops the reader (cancel first: it may be waiting for a buffer)
// and returns the buffers to the pool. A buffer the handler held when it
// aborted is left to the GC.
func (st *blobStream) close() {
	st.cancel()
	st.timer.Stop()
	st.rc.Close()
	if st.done == nil {
		return
	}
	<-st.done
	for c := range st.full {
		bufPool.Put(c.buf)
	}
	for {
		select {
		case b := <-st.bufs:
			bufPool.Put(b)
		default:
			return
		}
	}
}
