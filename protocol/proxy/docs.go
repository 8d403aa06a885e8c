package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// document is an encoded JSON answer, ready to write, and until when it is
// fresh. Its URLs lack their base (baseurl.go): bases are the offsets in
// body where each answer's own base URL goes.
type document struct {
	body    []byte
	length  []string // Content-Length header value, without bases
	bases   []int
	expires time.Time
	// decidedUntil, when set, is when a policy decision in the document
	// changes (a version ages in: policy_clock.go); it is not served
	// after it, fresh or stale.
	decidedUntil time.Time
}

func newDocument(body []byte, expires time.Time) document {
	body, bases := cutBaseMarks(body)
	return document{body: body, length: []string{strconv.Itoa(len(body))}, bases: bases, expires: expires}
}

// Expires lets the document cache expire a document with the data it was
// built from.
func (d document) Expires() time.Time { return d.expires }

// builder makes a document's value and says when the data it was made
// from was read (zero: now); the document is fresh for TagTTL from then.
type builder func(ctx context.Context) (v any, asOf time.Time, err error)

// serveDoc answers the metadata document key names (the request path, plus
// anything else the document depends on) from the document cache, or
// builds it once for every concurrent request. A document is fresh for
// TagTTL after the data it derives from was read; after that it is served
// stale, for at most MaxStale, while one background build replaces it, so
// no client waits for a revalidation. Failures are remembered for
// FailureTTL, so clients retrying against a struggling registry do not
// reach it again and again.
func (s *responder) serveDoc(w http.ResponseWriter, r *http.Request, key string, build builder) {
	key = s.policyDocKey(key) // policy_page.go: a reload takes effect at once
	res, err := s.docs.Get(r.Context(), key, s.fetchDoc(build))
	if s.undecided(res.Val, err) { // policy_clock.go
		s.docs.Forget(key)
		res, err = s.docs.Get(r.Context(), key, s.fetchDoc(build))
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeDoc(w, r, res.Val)
}

// fetchDoc builds and encodes a document for the cache, noting until when
// the policy decisions it holds stand (policy_clock.go).
func (s *responder) fetchDoc(build builder) func(ctx context.Context) (document, int64, error) {
	return func(ctx context.Context) (document, int64, error) {
		ctx, dec := withDecisions(ctx)
		v, asOf, err := build(ctx)
		if err != nil {
			return document{}, 0, dec.wrap(err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return document{}, 0, err
		}
		var expires time.Time
		if !asOf.IsZero() {
			expires = asOf.Add(s.opts.Store.TagTTL)
		}
		if s.urls != nil {
			// Signed archive URLs in a document outlive it, stale or not.
			expires = earliestNonZero(expires, time.Now().Add(s.opts.ArchiveURLTTL/2-s.opts.Store.MaxStale))
		}
		d := newDocument(append(b, '\n'), expires)
		d.decidedUntil = dec.until()
		return d, int64(len(b)), nil
	}
}

// serveFreshDoc answers from a fresh cached document, if there is one for
// key: a warm request needs no parsing, since a document is only cached
// under a key whose request was valid.
func (s *responder) serveFreshDoc(w http.ResponseWriter, r *http.Request, key string) bool {
	d, ok := s.docs.Fresh(s.policyDocKey(key))
	if ok && s.undecided(d, nil) {
		return false
	}
	if ok {
		s.writeDoc(w, r, d)
	}
	return ok
}

var (
	headerJSON    = []string{"application/json"}
	headerNoStore = []string{"no-store"}
)

// writeDoc writes an encoded JSON document, with the base URL of r's
// answer in its URLs.
func (s *responder) writeDoc(w http.ResponseWriter, r *http.Request, d document) {
	if len(d.bases) == 0 {
		writeEncoded(w, r, d.body, d.length)
		return
	}
	base, err := s.baseFor(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	body := spliceBase(d.body, d.bases, jsonBase(base))
	writeEncoded(w, r, body, []string{strconv.Itoa(len(body))})
}

// writeEncoded writes an encoded JSON document whose Content-Length header
// value is length.
func writeEncoded(w http.ResponseWriter, r *http.Request, body []byte, length []string) {
	h := w.Header()
	h["Content-Type"] = headerJSON
	h["Content-Length"] = length
	h["Cache-Control"] = headerNoStore
	if r.Method == http.MethodHead {
		return
	}
	w.Write(body)
}
