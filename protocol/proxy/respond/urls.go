package respond

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

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

// URLSigner makes archive URLs unguessable and time-limited: clients send
// no credentials when downloading archives, so when client authentication
// is on, the metadata (which they fetch with credentials) hands out URLs
// carrying an HMAC of the path and an expiry time.
type URLSigner struct {
	key []byte
	ttl time.Duration
	Now func() time.Time
	ticketMemo
}

func (u *URLSigner) mac(path string, expires int64) []byte {
	m := hmac.New(sha256.New, u.key)
	m.Write([]byte("oci-tofu archive v1\n"))
	m.Write([]byte(path))
	m.Write([]byte("\n"))
	m.Write([]byte(strconv.FormatInt(expires, 10)))
	return m.Sum(nil)
}

// sign returns the query string that authorises path until now+ttl.
func (u *URLSigner) sign(path string) string {
	expires := u.Now().Add(u.ttl).Unix()
	q := url.Values{}
	q.Set("expires", strconv.FormatInt(expires, 10))
	q.Set("signature", base64.RawURLEncoding.EncodeToString(u.mac(path, expires)))
	return q.Encode()
}

// verify checks the signature and expiry of a request for path.
func (u *URLSigner) verify(path string, q url.Values) error {
	expires, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	if err != nil {
		return StatusErr(http.StatusForbidden, nil, "this archive URL is not signed: request it again through the mirror or registry metadata")
	}
	sig, err := base64.RawURLEncoding.DecodeString(q.Get("signature"))
	if err != nil || !hmac.Equal(sig, u.mac(path, expires)) {
		return StatusErr(http.StatusForbidden, nil, "this archive URL's signature is invalid")
	}
	if u.Now().Unix() > expires {
		return StatusErr(http.StatusForbidden, nil, "this archive URL has expired: request it again through the mirror or registry metadata")
	}
	return nil
}

// NewURLSigner signs the URLs handed out with key; they are valid for
// ttl.
func NewURLSigner(key []byte, ttl time.Duration) *URLSigner {
	return &URLSigner{key: key, ttl: ttl, Now: time.Now}
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
