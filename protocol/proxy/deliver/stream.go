package deliver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/cache"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// StreamBufferSize is the size of the buffers a download streams
// through, from a pool.
const StreamBufferSize = 256 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, StreamBufferSize); return &b }}

// blobFile says how a streamed blob is presented to the client.
type blobFile struct {
	name        string // the download's file name
	contentType string
	// pinned: the URL names the blob's digest (directly or through an
	// index), so HTTP caches may keep it.
	pinned bool
}

// serveBlob streams a blob from the registry to the client. It never
// buffers the blob: memory per download is a few buffers of
// StreamBufferSize (deliver says how many). The sha256 and size are
// checked as the bytes pass; the last buffer is held back until the whole
// blob has verified, so on a mismatch the client never receives a
// complete file: the response is aborted (the connection or HTTP/2 stream
// is reset) and the client sees a broken download, never a silently wrong
// file.
func (s *Deliverer) serveBlob(w http.ResponseWriter, r *http.Request, repo *store.Repo, zip ocispec.Descriptor, file blobFile) {
	if !validLayer(zip) {
		s.Fail(w, r, newError(http.StatusBadGateway, nil, "the artifact's layer has an invalid descriptor (digest %q, %d bytes)", zip.Digest, zip.Size))
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
		s.Fail(w, r, err)
		return
	}
	defer st.close()
	s.blobHeaders(w, zip, file)
	st.deliver(w)
}

// blobHeaders describe the blob a response carries: set only once it is
// known to be answered with the blob (HEAD, or a stream opened), so an
// error or a redirect carries none of them.
func (s *Deliverer) blobHeaders(w http.ResponseWriter, zip ocispec.Descriptor, file blobFile) {
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
	s   *Deliverer
	r   *http.Request
	zip ocispec.Descriptor
	rc  io.ReadCloser

	// Stall detection: ctx is cancelled when neither the registry nor the
	// client made progress for stall.
	ctx    context.Context
	cancel context.CancelFunc
	stall  time.Duration
	timer  *time.Timer

	// The buffers, from bufPool while streaming (inline's, or pipe's);
	// writing is the one a write to the client has not returned from:
	// after a failed write an HTTP/2 frame may still refer to it, so it is
	// left to the GC.
	bufs    [2]*[]byte
	pipe    *pipe
	writing *[]byte

	// What the registry sent so far, and why reading stopped early.
	hash       hash.Hash
	total      int64
	readErr    error
	readReason string
}

// openBlobStream starts fetching the blob, bounded by the stall timeout;
// with RedirectArchives, it returns the storage URL instead when the
// registry redirects the blob's download.
func (s *Deliverer) openBlobStream(r *http.Request, repo *store.Repo, zip ocispec.Descriptor) (*blobStream, string, error) {
	st := &blobStream{s: s, r: r, zip: zip, stall: s.StallTimeout, hash: sha256.New()}
	st.ctx, st.cancel = context.WithCancel(r.Context())
	st.timer = time.AfterFunc(st.stall, st.cancel)
	loc, rc, err := s.fetchBlob(st.ctx, repo, zip)
	if err == nil && loc != "" && credentialsWouldFollow(r, loc) {
		loc = ""
		rc, err = repo.Fetch(st.ctx, zip)
	}
	if err != nil || loc != "" {
		stalled := !st.timer.Stop() // the timer fired: it cancelled the fetch
		st.cancel()
		if err != nil && stalled && r.Context().Err() == nil {
			// The stall timer, not the client, gave up.
			err = newError(http.StatusGatewayTimeout, err, "the OCI registry did not start sending the blob within %s", st.stall)
		}
		return nil, loc, err
	}
	st.rc = rc
	return st, "", nil
}

// fetchBlob opens the blob, or with RedirectArchives locates its storage.
func (s *Deliverer) fetchBlob(ctx context.Context, repo *store.Repo, zip ocispec.Descriptor) (string, io.ReadCloser, error) {
	if s.Redirect {
		return repo.FetchOrLocate(ctx, zip)
	}
	rc, err := repo.Fetch(ctx, zip)
	return "", rc, err
}

// credentialsWouldFollow reports whether a client that sent r with
// credentials would send them on to loc if redirected there: Go's HTTP
// client (tofu's, terraform's) keeps Authorization and Cookie on a
// redirect to the same host name, whatever the port, or to a subdomain of
// it. Such a download is streamed rather than redirected, so a client's
// token for the proxy never reaches storage under the proxy's domain.
func credentialsWouldFollow(r *http.Request, loc string) bool {
	if r.Header.Get("Authorization") == "" && r.Header.Get("Cookie") == "" {
		return false
	}
	u, err := url.Parse(loc)
	if err != nil {
		return true
	}
	dst, src := strings.ToLower(u.Hostname()), strings.ToLower((&url.URL{Host: r.Host}).Hostname())
	return dst == src || strings.HasSuffix(dst, "."+src)
}

// redirectToStorage sends the client to the storage holding the archive.
// The client checks what it downloads against the hashes of the proxy's
// documents and its lock file; the URL, presigned by the registry, carries
// no credential of the proxy's (docs/security.md).
func (s *Deliverer) redirectToStorage(w http.ResponseWriter, r *http.Request, loc string) {
	w.Header().Set("Cache-Control", "no-store") // presigned URLs expire
	s.Redirects.Inc()
	http.Redirect(w, r, loc, http.StatusTemporaryRedirect)
}

// deliver streams the blob in the way that costs the least CPU per byte
// for the client's protocol (measured in docs/benchmarks.md). Over
// HTTP/1.1 the handler's write encrypts and sends in the handler's own
// goroutine: inline, with no hand-off between goroutines, costs 7-10 %
// less than a reader goroutine. Over HTTP/2 a write waits for the
// connection's writer goroutines: a reader goroutine hashing the next
// buffers meanwhile costs 7-9 % less than inline.
func (st *blobStream) deliver(w http.ResponseWriter) {
	if st.r.ProtoMajor >= 2 {
		st.pipeline(w)
		return
	}
	st.inline(w)
}

// inline streams the blob in the handler's goroutine, one buffer behind
// the registry (two buffers): each buffer is read and hashed, then the
// one before it is written to the client, while the kernel's socket
// buffers keep both connections moving. The last buffer is written only
// once the whole blob has verified; otherwise the response is aborted.
func (st *blobStream) inline(w http.ResponseWriter) {
	ctl := http.NewResponseController(w)
	src := io.LimitReader(st.rc, st.zip.Size+1) // one byte more reveals an over-long blob
	st.bufs = [2]*[]byte{bufPool.Get().(*[]byte), bufPool.Get().(*[]byte)}
	cur, held, heldN := st.bufs[0], st.bufs[1], 0
	for more := true; more; {
		var n int
		n, more = st.read(src, *cur)
		if n == 0 {
			continue
		}
		if heldN > 0 {
			st.write(w, ctl, held, heldN)
		}
		cur, held, heldN = held, cur, n
	}
	if reason, err := st.verdict(); err != nil {
		st.abort(reason, err)
	}
	if heldN > 0 {
		st.write(w, ctl, held, heldN)
	}
}

// read fills buf from the registry, hashing and counting what arrived:
// the bytes to pass on, and false once the stream ended, with readErr
// set if it ended early. A panic ends this download, not the process.
func (st *blobStream) read(src io.Reader, buf []byte) (n int, more bool) {
	err := cache.Recover(func() error {
		n, more = st.fill(src, buf)
		return nil
	})
	if err != nil {
		st.readErr, st.readReason = err, "internal"
		return 0, false
	}
	return n, more
}

// fill reads one buffer and hashes it; false when the stream ended.
func (st *blobStream) fill(src io.Reader, buf []byte) (int, bool) {
	n, err := io.ReadFull(src, buf)
	if n > 0 {
		st.timer.Reset(st.stall)
		st.hash.Write(buf[:n])
		st.total += int64(n)
		if st.total > st.zip.Size {
			st.readErr, st.readReason = errors.New("the registry sent more bytes than the descriptor's size"), "size_mismatch"
			return 0, false
		}
	}
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return n, false
	case err != nil:
		st.readErr, st.readReason = err, "read"
		return n, false
	}
	return n, true
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

// write sends the first n bytes of buf to the client.
func (st *blobStream) write(w http.ResponseWriter, ctl *http.ResponseController, buf *[]byte, n int) {
	ctl.SetWriteDeadline(time.Now().Add(st.stall))
	st.writing = buf
	written, err := w.Write((*buf)[:n])
	st.s.Streamed.Add(float64(written))
	if err != nil {
		st.abort("client", err)
	}
	st.writing = nil
	st.timer.Reset(st.stall)
}

// abort counts and logs why the stream failed and aborts the response.
func (st *blobStream) abort(reason string, err error) {
	st.s.Aborts.WithLabelValues(reason).Inc()
	if reason != "client" {
		st.s.Upstream(reason)
	}
	st.s.Log.LogAttrs(st.r.Context(), slog.LevelWarn, "archive stream aborted",
		slog.String("reason", reason), slog.String("path", st.r.URL.EscapedPath()),
		slog.String("digest", st.zip.Digest.String()), slog.Any("error", err))
	panic(http.ErrAbortHandler)
}

// close ends the registry's response (cancel first: a pipeline's reader
// may be waiting for a buffer) and returns the buffers to the pool, but
// for one a failed write may still refer to.
func (st *blobStream) close() {
	st.cancel()
	st.timer.Stop()
	st.rc.Close()
	if st.pipe != nil {
		st.pipe.close()
	}
	for _, b := range st.bufs {
		if b != nil && b != st.writing {
			bufPool.Put(b)
		}
	}
}

// pipeBuffers is how many buffers a pipelined download streams through.
const pipeBuffers = 4

// pipe hands buffers between a pipeline's reader goroutine and the
// handler: they come from free and go back full on full. The reader
// closes full, and done, when it stops, with what it found set before.
type pipe struct {
	done chan struct{}
	free chan *[]byte
	full chan chunk
}

// chunk is a buffer read from the registry and hashed, on its way to the
// client.
type chunk struct {
	buf *[]byte
	n   int
}

// pipeline streams the blob through a reader goroutine, which reads and
// hashes the registry's bytes while the handler writes earlier buffers
// to the client. The last buffer is written only once the whole blob has
// verified; otherwise the response is aborted.
func (st *blobStream) pipeline(w http.ResponseWriter) {
	p := &pipe{done: make(chan struct{}), free: make(chan *[]byte, pipeBuffers), full: make(chan chunk, pipeBuffers)}
	for i := 0; i < pipeBuffers; i++ {
		p.free <- bufPool.Get().(*[]byte)
	}
	st.pipe = p
	go st.readPipe(p)
	ctl := http.NewResponseController(w)
	var held chunk
	for c := range p.full {
		if held.buf != nil {
			st.write(w, ctl, held.buf, held.n)
			p.free <- held.buf
		}
		held = c
	}
	// full is closed: the reader is done and its results are visible.
	if reason, err := st.verdict(); err != nil {
		st.abort(reason, err)
	}
	if held.buf != nil {
		st.write(w, ctl, held.buf, held.n)
		p.free <- held.buf // never blocks: as many slots as buffers
	}
}

// readPipe is the reader goroutine: it fills free buffers from the
// registry until the stream ends, at most one byte more than the
// descriptor's size (which reveals an over-long blob).
func (st *blobStream) readPipe(p *pipe) {
	defer close(p.done)
	defer close(p.full)
	src := io.LimitReader(st.rc, st.zip.Size+1)
	for more := true; more; {
		var buf *[]byte
		select {
		case buf = <-p.free:
		case <-st.ctx.Done():
			st.readErr, st.readReason = st.ctx.Err(), "cancelled"
			return
		}
		var n int
		n, more = st.read(src, *buf)
		if n == 0 {
			p.free <- buf
			continue
		}
		p.full <- chunk{buf, n} // never blocks: as many slots as buffers
	}
}

// close waits for the reader to stop (the stream's context is cancelled
// and the registry's response closed first) and returns its buffers to
// the pool. A buffer the handler held when it aborted is left to the GC.
func (p *pipe) close() {
	<-p.done
	for c := range p.full {
		bufPool.Put(c.buf)
	}
	for {
		select {
		case b := <-p.free:
			bufPool.Put(b)
		default:
			return
		}
	}
}
