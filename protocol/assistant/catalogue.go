package assistant

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync/atomic"

	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// Catalogue answers the catalogue's JSON documents: every tool is a
// reading of them, so a tool says of an address exactly what the
// catalogue says to the same caller, scope included.
type Catalogue interface {
	// Get decodes into v the JSON document of the catalogue path below
	// catalog.Prefix (e.g. "modules/HOST/NS/NAME/SYSTEM"), with query.
	// A document the catalogue refuses is an *Refusal.
	Get(ctx context.Context, path string, query url.Values, v any) error
	// OwnHost is the registry hostname of the proxy's own modules, those
	// whose address a caller writes without a host.
	OwnHost(ctx context.Context) (string, error)
}

// maxDocument bounds a catalogue document read (an aws-sized provider's
// page is well under a megabyte).
const maxDocument = 16 << 20

// Refusal is the catalogue's answer when it serves no document: its
// HTTP status and its message, which the tool passes on.
type Refusal struct {
	Status  int
	Message string
}

func (e *Refusal) Error() string { return e.Message }

type requestHostKey struct{}

type readsKey struct{}

// withReadCount is ctx counting the catalogue documents one request's
// tool call reads (Local.Spend).
func withReadCount(ctx context.Context) context.Context {
	return context.WithValue(ctx, readsKey{}, new(atomic.Int32))
}

// laterRead reports whether a read in ctx is past the first of its
// request.
func laterRead(ctx context.Context) bool {
	n, ok := ctx.Value(readsKey{}).(*atomic.Int32)
	return ok && n.Add(1) > 1
}

// WithRequestHost is ctx carrying the Host a Streamable HTTP request was
// sent to: the catalogue writes module addresses with it, as for any
// client of the proxy.
func WithRequestHost(ctx context.Context, host string) context.Context {
	return context.WithValue(ctx, requestHostKey{}, host)
}

// Local is the catalogue of a server in this process: each Get is a
// request to Handler (the catalogue's handlers) in the caller's context,
// which carries its client (respond.ReaderOf) and the Host it asked
// (WithRequestHost; DefaultHost without one).
type Local struct {
	Handler     http.Handler
	DefaultHost string
	// Hostname is the registry hostname of a request to Host (the
	// server's respond.Responder.RegistryHostname).
	Hostname func(host string) (string, error)
	// Spend, when set, is asked before each document a request's tool
	// call reads past its first (the request itself spent one): the
	// caller's budget, an error (the 429's) when it is spent.
	Spend func(ctx context.Context) error
}

// OwnHost is the registry hostname of the request ctx carries.
func (l *Local) OwnHost(ctx context.Context) (string, error) {
	return l.Hostname(l.host(ctx))
}

func (l *Local) host(ctx context.Context) string {
	if h, ok := ctx.Value(requestHostKey{}).(string); ok && h != "" {
		return h
	}
	return l.DefaultHost
}

// Get asks Handler for the document.
func (l *Local) Get(ctx context.Context, path string, query url.Values, v any) error {
	if l.Spend != nil && laterRead(ctx) {
		if err := l.Spend(ctx); err != nil {
			return err
		}
	}
	ctx, doc := catalog.InProcess(ctx)
	r, err := newRequest(ctx, "http://"+l.host(ctx), path, query)
	if err != nil {
		return err
	}
	w := &recorder{header: http.Header{}, status: http.StatusOK}
	l.Handler.ServeHTTP(w, r)
	if w.over {
		return fmt.Errorf("the catalogue's document of %s is larger than %d bytes", path, maxDocument)
	}
	if got, ok := doc.Value(); ok && w.status == http.StatusOK {
		return assign(v, got)
	}
	return decode(w.status, w.body.Bytes(), v)
}

// assign sets *v to the document got handed over: got itself when v
// points to its type, else what decoding its JSON gives.
func assign(v, got any) error {
	dst := reflect.ValueOf(v)
	if dst.Kind() == reflect.Pointer && !dst.IsNil() && dst.Elem().Type() == reflect.TypeOf(got) {
		dst.Elem().Set(reflect.ValueOf(got))
		return nil
	}
	b, err := json.Marshal(got)
	if err != nil {
		return fmt.Errorf("reading the catalogue's document: %w", err)
	}
	return decode(http.StatusOK, b, v)
}

// Remote is the catalogue of a proxy reached over HTTPS (oci-tofu mcp
// --proxy): each Get is a request with the caller's bearer token, as
// tofu sends it.
type Remote struct {
	// URL is the proxy's root; Client reaches it (its TLS roots, its
	// timeouts); Token is the bearer token ("" for none).
	URL    *url.URL
	Client *http.Client
	Token  string
	// RegistryHostname, when set, is the proxy's --registry-hostname;
	// otherwise its own modules are under URL's host.
	RegistryHostname string
}

// OwnHost is the proxy's registry hostname.
func (rm *Remote) OwnHost(context.Context) (string, error) {
	if rm.RegistryHostname != "" {
		return rm.RegistryHostname, nil
	}
	return strings.ToLower(rm.URL.Hostname()), nil
}

// Get fetches the document.
func (rm *Remote) Get(ctx context.Context, path string, query url.Values, v any) error {
	r, err := newRequest(ctx, strings.TrimSuffix(rm.URL.String(), "/"), path, query)
	if err != nil {
		return err
	}
	if rm.Token != "" {
		r.Header.Set("Authorization", "Bearer "+rm.Token)
	}
	resp, err := rm.Client.Do(r)
	if err != nil {
		return fmt.Errorf("asking the proxy: %w", redacted(err))
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return fmt.Errorf("reading the proxy's answer: %w", err)
	}
	if len(b) > maxDocument {
		return fmt.Errorf("the catalogue's document of %s is larger than %d bytes", path, maxDocument)
	}
	return decode(resp.StatusCode, b, v)
}

// redacted is err without the request's URL (an error names only what
// it must).
func redacted(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// newRequest is the GET of path's JSON document below root.
func newRequest(ctx context.Context, root, path string, query url.Values) (*http.Request, error) {
	q := url.Values{}
	for k, vs := range query {
		q[k] = vs
	}
	q.Set("format", "json")
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, root+catalog.Prefix+path+"?"+q.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("catalogue path %q: %w", path, err)
	}
	r.Header.Set("Accept", "application/json")
	return r, nil
}

// decode reads a catalogue answer of status with body b into v.
func decode(status int, b []byte, v any) error {
	if status != http.StatusOK {
		return refusal(status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("reading the catalogue's document: %w", err)
	}
	return nil
}

// refusal is the catalogue's error answer of status: its first message.
func refusal(status int, b []byte) error {
	var e struct {
		Errors []string `json:"errors"`
	}
	msg := http.StatusText(status)
	if json.Unmarshal(b, &e) == nil && len(e.Errors) > 0 {
		msg = e.Errors[0]
	}
	return &Refusal{Status: status, Message: msg}
}

// recorder is the ResponseWriter of a Local request: it keeps the
// status and at most maxDocument bytes of the body.
type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
	over   bool
}

func (w *recorder) Header() http.Header { return w.header }

func (w *recorder) WriteHeader(status int) {
	if !w.wrote {
		w.status, w.wrote = status, true
	}
}

func (w *recorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if w.body.Len()+len(b) > maxDocument {
		w.over = true
		return 0, errors.New("assistant: document too large")
	}
	return w.body.Write(b)
}
