package respond

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/source"
)

// document is an encoded JSON answer, ready to write, and until when it is
// fresh. Its URLs lack their base (baseMark, below): bases are the offsets in
// body where each answer's own base URL goes.
type document struct {
	body   []byte
	length []string // Content-Length header value, without bases
	bases  []int
	// tickets are the offsets where the signed URLs' ticket goes (who
	// they were handed to, for the audit trail: access.go).
	tickets []int
	expires time.Time
	// decidedUntil, when set, is when a policy decision in the document
	// changes (a version ages in: undecided); it is not served
	// after it, fresh or stale.
	decidedUntil time.Time
	// spliced, for a document with bases, is its body as last answered
	// (with that answer's base), shared by the copies the cache hands
	// out: the next answer with the same base writes it as it is.
	spliced *atomic.Pointer[splicedDoc]
}

// splicedDoc is a document's body with one answer's base spliced in, and
// what that base was made from (baseFor): nothing with a public URL, the
// request's Host when the proxy terminates TLS, the depth of the path for
// relative URLs.
type splicedDoc struct {
	ticket string
	tls    bool
	host   string
	depth  int
	body   []byte
	length []string
}

// maxSplicedBase is the longest base (JSON-escaped) a document keeps its
// spliced body for; answers with longer bases (a made-up Host) are
// spliced each time. It bounds what a document's cache cost counts for
// its spliced copy.
const maxSplicedBase = 256

func newDocument(body []byte, expires time.Time) document {
	body, bases, tickets := cutBaseMarks(body)
	d := document{body: body, length: []string{strconv.Itoa(len(body))}, bases: bases, tickets: tickets, expires: expires}
	if len(bases) > 0 {
		d.spliced = new(atomic.Pointer[splicedDoc])
	}
	return d
}

// cost is about the bytes the document holds: its body and, with bases,
// room for its spliced copy with the longest base kept.
func (d document) cost() int64 {
	n := len(d.body)
	if len(d.bases) > 0 {
		n += len(d.body) + len(d.bases)*maxSplicedBase
	}
	return int64(n)
}

// Expires lets the document cache expire a document with the data it was
// built from.
func (d document) Expires() time.Time { return d.expires }

// builder makes a document's value and says when the data it was made
// from was read (zero: now); the document is fresh for TagTTL from then.
type builder func(ctx context.Context) (v any, asOf time.Time, err error)

// ServeDoc answers the metadata document key names (the request path, plus
// anything else the document depends on) from the document cache, or
// builds it once for every concurrent request. A document is fresh for
// TagTTL after the data it derives from was read; after that it is served
// stale, for at most MaxStale, while one background build replaces it, so
// no client waits for a revalidation. Failures are remembered for
// FailureTTL, so clients retrying against a struggling registry do not
// reach it again and again.
func (s *Responder) ServeDoc(w http.ResponseWriter, r *http.Request, key string, build builder) {
	key = s.policyDocKey(key) // a reload takes effect at once
	res, err := s.Docs.Get(r.Context(), key, s.fetchDoc(build))
	if s.undecided(res.Val, err) {
		s.Docs.Forget(key)
		res, err = s.Docs.Get(r.Context(), key, s.fetchDoc(build))
	}
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	s.writeDoc(w, r, res.Val)
}

// fetchDoc builds and encodes a document for the cache, noting until when
// the policy decisions it holds stand (undecided).
func (s *Responder) fetchDoc(build builder) func(ctx context.Context) (document, int64, error) {
	return func(ctx context.Context) (document, int64, error) {
		ctx, dec := source.WithDecisions(ctx)
		v, asOf, err := build(ctx)
		if err != nil {
			return document{}, 0, dec.Wrap(err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return document{}, 0, err
		}
		var expires time.Time
		if !asOf.IsZero() {
			expires = asOf.Add(s.Opts.TagTTL)
		}
		if s.URLs != nil {
			// Signed archive URLs in a document outlive it, stale or not.
			expires = source.Earliest(expires, time.Now().Add(s.Opts.ArchiveURLTTL/2-s.Opts.MaxStale))
		}
		d := newDocument(append(b, '\n'), expires)
		d.decidedUntil = dec.Until()
		return d, d.cost(), nil
	}
}

// serveFreshDoc answers from a fresh cached document, if there is one for
// key: a warm request needs no parsing, since a document is only cached
// under a key whose request was valid.
func (s *Responder) serveFreshDoc(w http.ResponseWriter, r *http.Request, key string) bool {
	d, ok := s.Docs.Fresh(s.policyDocKey(key))
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
func (s *Responder) writeDoc(w http.ResponseWriter, r *http.Request, d document) {
	if len(d.bases) == 0 {
		writeEncoded(w, r, d.body, d.length)
		return
	}
	ticket := ""
	if len(d.tickets) > 0 && s.URLs != nil { // signed URLs name who they were handed to
		ticket = s.ticketFor(r.Context())
	}
	if sp := d.spliced.Load(); sp != nil && sp.ticket == ticket && s.sameBase(r, sp) {
		writeEncoded(w, r, sp.body, sp.length)
		return
	}
	base, err := s.BaseFor(r)
	if err != nil {
		s.Fail(w, r, err)
		return
	}
	base = jsonBase(base)
	sp := &splicedDoc{ticket: ticket, tls: r.TLS != nil, body: splice(d.body, d.bases, base, d.tickets, jsonBase(ticket))}
	sp.length = []string{strconv.Itoa(len(sp.body))}
	if sp.tls {
		sp.host = r.Host
	} else {
		sp.depth = strings.Count(r.URL.EscapedPath(), "/")
	}
	if len(base) <= maxSplicedBase {
		d.spliced.Store(sp)
	}
	writeEncoded(w, r, sp.body, sp.length)
}

// sameBase says whether the answer to r gets the base sp was spliced
// with (baseFor): always with a public URL; with TLS, when r has the
// same Host (valid, since sp was made with it); otherwise, when r's path
// is as deep.
func (s *Responder) sameBase(r *http.Request, sp *splicedDoc) bool {
	switch {
	case s.Opts.PublicURL != "":
		return true
	case r.TLS != nil:
		return sp.tls && sp.host == r.Host
	}
	return !sp.tls && sp.depth == strings.Count(r.URL.EscapedPath(), "/")
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

// policyDocKey is a document's cache key under the policy and the
// vulnerability database in force, and the registry notifications acted
// on: a document built under one policy, or one database, or before a
// notified push, is not served once another is in force (a reload, a
// notification), so the new decisions and versions take effect at once
// rather than after --tag-ttl. Before the first of any, and without
// them, the key is the request's alone (warm requests pay nothing but
// atomic loads).
func (s *Responder) policyDocKey(key string) string {
	var gen, db, notified uint64
	if s.Opts.Policy != nil {
		gen = s.Opts.Policy.Generation()
	}
	if s.Opts.VulnDB != nil {
		db = s.Opts.VulnDB.Generation()
	}
	if s.Opts.Notified != nil {
		notified = s.Opts.Notified.Load()
	}
	switch {
	case gen == 0 && db == 0 && notified == 0:
		return key
	case db == 0 && notified == 0:
		return key + "\x00policy " + strconv.FormatUint(gen, 10)
	case notified == 0:
		return key + "\x00policy " + strconv.FormatUint(gen, 10) + " vulndb " + strconv.FormatUint(db, 10)
	}
	return key + "\x00policy " + strconv.FormatUint(gen, 10) + " vulndb " + strconv.FormatUint(db, 10) + " notified " + strconv.FormatUint(notified, 10)
}

// Policy decisions that change with time (min_age: a version ages in)
// are made when a document is built, and documents are cached: a
// document notes the earliest time one of its decisions changes
// (decidedUntil, recorded with source.WithDecisions: the gate notes its
// decisions), and is built anew, not served, from then on, by
// Options.Now.

// undecided reports whether a cached document (or failure) holds a policy
// decision that has changed since it was built.
func (s *Responder) undecided(d document, err error) bool {
	until := d.decidedUntil
	if err != nil {
		var ok bool
		if until, ok = source.DecidedUntil(err); !ok {
			return false
		}
	}
	return !until.IsZero() && !s.Opts.Now().Before(until)
}

// The URLs the proxy hands out (archives, module packages, pull-through
// files) are absolute whenever the proxy knows the URL its clients reach
// it by: from Options.PublicURL, or, when the proxy terminates TLS
// itself, from the request (https and its Host). Only a plain-HTTP proxy
// without a public URL, which cannot know the scheme or path prefix of
// the front that terminates TLS for it, keeps them relative.
//
// The document cache is shared between clients and never holds a host:
// documents are cached with baseMark where the base goes, and each answer
// gets its own request's base spliced in as it is written. A client
// sending a made-up Host gets URLs to that host and nobody else does.

// BaseMark stands for the base URL in a document as it is built; it is
// cut out of the encoded document (see cutBaseMarks), so it never reaches
// a client. A NUL cannot occur in anything else a document carries.
const BaseMark = "\x00oci-tofu-base\x00"

// encodedBaseMark is baseMark as encoding/json writes it inside a string.
var encodedBaseMark = func() []byte {
	b, _ := json.Marshal(BaseMark)
	return b[1 : len(b)-1]
}()

// baseRef is what a document carries for the server path p (from the
// root, e.g. ArchivePrefix+…): baseMark, which becomes the request's base
// URL (or the way back to the root, for relative URLs), and p.
func baseRef(p string) string { return BaseMark + p }

// cutBaseMarks removes every encoded BaseMark and ticketMark from an
// encoded document and returns the offsets where the base URL and the
// ticket go.
func cutBaseMarks(b []byte) (_ []byte, bases, tickets []int) {
	if !bytes.Contains(b, encodedBaseMark) {
		return b, nil, nil
	}
	var out []byte
	for {
		i := bytes.Index(b, encodedMarkPrefix)
		if i < 0 {
			return append(out, b...), bases, tickets
		}
		out = append(out, b[:i]...)
		if bytes.HasPrefix(b[i:], encodedTicketMark) {
			tickets = append(tickets, len(out))
			b = b[i+len(encodedTicketMark):]
			continue
		}
		if !bytes.HasPrefix(b[i:], encodedBaseMark) { // cannot be: NUL is in no other string
			out = append(out, b[i:i+len(encodedMarkPrefix)]...)
			b = b[i+len(encodedMarkPrefix):]
			continue
		}
		bases = append(bases, len(out))
		b = b[i+len(encodedBaseMark):]
	}
}

// splice is body with base written at the offsets bases and ticket at
// the offsets tickets (both strings already JSON-escaped).
func splice(body []byte, bases []int, base string, tickets []int, ticket string) []byte {
	out := make([]byte, 0, len(body)+len(bases)*len(base)+len(tickets)*len(ticket))
	prev := 0
	for len(bases) > 0 || len(tickets) > 0 {
		var i int
		var what string
		if len(tickets) == 0 || len(bases) > 0 && bases[0] <= tickets[0] {
			i, what, bases = bases[0], base, bases[1:]
		} else {
			i, what, tickets = tickets[0], ticket, tickets[1:]
		}
		out = append(out, body[prev:i]...)
		out = append(out, what...)
		prev = i
	}
	return append(out, body[prev:]...)
}

// ParsePublicURL checks the URL clients reach the proxy by:
// https://host[:port][/prefix], without user, query or fragment. It
// returns it without a trailing slash, ready for server paths to follow.
func ParsePublicURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("public URL %q: %w", s, err)
	}
	switch {
	case u.Scheme != "https":
		return "", fmt.Errorf("public URL %q: want https://host[:port][/prefix] (OpenTofu and Terraform require HTTPS)", s)
	case u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "":
		return "", fmt.Errorf("public URL %q: no user, query or fragment", s)
	case !validAuthority(u.Host):
		return "", fmt.Errorf("public URL %q: invalid host %q", s, u.Host)
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if path != "" {
		if err := CheckRawPath(&url.URL{Path: path, RawPath: path}); err != nil {
			return "", fmt.Errorf("public URL %q: %w", s, err)
		}
	}
	return "https://" + strings.ToLower(u.Host) + path, nil
}

// validAuthority says whether hostport is a DNS name or IP address with an
// optional port: what a URL the proxy hands out may carry as its host.
func validAuthority(hostport string) bool {
	hostport = strings.ToLower(hostport)
	if names.ValidHostname(hostport) {
		return true
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	if port != "" && !names.ValidHostname("p:"+port) {
		return false
	}
	ip := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return net.ParseIP(ip) != nil && (!strings.Contains(ip, ":") || strings.HasPrefix(hostport, "["))
}

// BaseFor is the base URL of the URLs in an answer to r, without a
// trailing slash: the public URL; https and the request's Host when the
// proxy terminates TLS; otherwise a relative path back to the root from
// r's path ("../.."), which resolves against whatever URL the client used.
func (s *Responder) BaseFor(r *http.Request) (string, error) {
	if s.Opts.PublicURL != "" {
		return s.Opts.PublicURL, nil
	}
	if r.TLS != nil {
		if !validAuthority(r.Host) {
			return "", BadPath("invalid Host %q", r.Host)
		}
		return "https://" + strings.ToLower(r.Host), nil
	}
	return backToRoot(r.URL.EscapedPath()), nil
}

// backToRoot is the relative path from the directory of an absolute
// escaped path to the root: "/v1/a/b" → "../..".
func backToRoot(escaped string) string {
	n := strings.Count(escaped, "/") - 1
	if n <= 0 {
		return "."
	}
	return strings.TrimSuffix(strings.Repeat("../", n), "/")
}

// jsonBase is base escaped for a JSON string.
func jsonBase(base string) string {
	b, _ := json.Marshal(base)
	return string(b[1 : len(b)-1])
}

// FileRef is the URL of a file the proxy serves below prefix, at the
// escaped path p below it, as a document carries it: the base marked,
// and signed when client authentication is on.
func (s *Responder) FileRef(prefix, p string) string {
	ref := baseRef(prefix + p)
	if s.URLs == nil {
		return ref
	}
	return ref + "?" + s.URLs.sign(prefix+p) + ticketMark
}

// LocationOf is the URL a FileRef names, for a header (a module's
// X-Terraform-Get) answering r: base in place of BaseMark, and the
// ticket, if any.
func (s *Responder) LocationOf(r *http.Request, base, ref string) string {
	ref = base + strings.TrimPrefix(ref, BaseMark)
	ticket := ""
	if strings.HasSuffix(ref, ticketMark) {
		ticket = s.ticketFor(r.Context())
	}
	return strings.Replace(ref, ticketMark, ticket, 1)
}
