package oci

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
)

// LayoutPrefix introduces an OCI image layout directory where a registry
// repository would otherwise be named: "oci-layout:PATH".
const LayoutPrefix = "oci-layout:"

// ReadOnlyRepository is what reading artifacts needs: a registry repository
// or an OCI layout.
type ReadOnlyRepository interface {
	oras.ReadOnlyTarget
	registry.TagLister
}

// Repository is a ReadOnlyRepository that can also be written.
type Repository interface {
	oras.Target
	registry.TagLister
}

// Reference names a repository, and optionally a tag or digest within it.
type Reference struct {
	// Layout is set for "oci-layout:PATH" references; Repository is then the path.
	Layout bool
	// Registry is host[:port] for registry references.
	Registry   string
	Repository string
	// Reference is a tag or a digest ("sha256:…"), or empty.
	Reference string
}

// ParseReference reads "host[:port]/path[:tag|@digest]" or
// "oci-layout:PATH[:tag|@digest]".
func ParseReference(s string) (Reference, error) {
	if path, ok := strings.CutPrefix(s, LayoutPrefix); ok {
		ref := Reference{Layout: true, Repository: path}
		if i := strings.LastIndex(path, "@"); i >= 0 {
			ref.Repository, ref.Reference = path[:i], path[i+1:]
		} else if i := strings.LastIndex(path, ":"); i > strings.LastIndex(path, "/") {
			ref.Repository, ref.Reference = path[:i], path[i+1:]
		}
		if ref.Repository == "" {
			return Reference{}, fmt.Errorf("invalid reference %q: no layout directory after %q", s, LayoutPrefix)
		}
		return ref, nil
	}
	if strings.Contains(s, "://") {
		return Reference{}, fmt.Errorf("invalid reference %q: write host[:port]/repository without a scheme, or %sPATH", s, LayoutPrefix)
	}
	return ParseRegistryReference(s)
}

// WithReference returns a copy of r naming tag or digest ref.
func (r Reference) WithReference(ref string) Reference {
	r.Reference = ref
	return r
}

// Name is the repository without tag or digest.
func (r Reference) Name() string {
	if r.Layout {
		return LayoutPrefix + r.Repository
	}
	return r.Registry + "/" + r.Repository
}

func (r Reference) String() string {
	switch {
	case r.Reference == "":
		return r.Name()
	case strings.Contains(r.Reference, ":"):
		return r.Name() + "@" + r.Reference
	default:
		return r.Name() + ":" + r.Reference
	}
}

// Options configure how repositories are reached.
type Options struct {
	// PlainHTTP talks HTTP instead of HTTPS to registries (local tests only).
	PlainHTTP bool
	// CAFile adds PEM certificates to the trusted roots (which already
	// include SSL_CERT_FILE and SSL_CERT_DIR).
	CAFile string
	// Username and Password, when set, are used for every registry instead
	// of the docker credential store.
	Username, Password string
	// UserAgent is sent to registries.
	UserAgent string
	// Timeout bounds each registry round trip up to the response headers.
	Timeout time.Duration
	// Transport, when set, replaces the default transport (tests, metrics).
	Transport http.RoundTripper
	// Etiquette bounds concurrency and retries per registry (defaults when nil).
	Etiquette *Etiquette
	// CatalogPageSize is the page size (n) asked of a registry's catalog
	// (Registry, repolist.List): DefaultCatalogPageSize when 0; tests lower it
	// to exercise paging.
	CatalogPageSize int
	// HeldIndex, "host[:port]/path", is the held-address index every
	// publish through this client is recorded in (docs/catalogue.md,
	// "The held-address index"): a Commit that tags, and RecordHeld.
	// Repositories opened for writing must then be on its registry
	// (Open refuses others), so the credentials that push go to no other
	// host. Empty: nothing is recorded.
	HeldIndex string
	// Logger is told what could not be recorded (slog.Default when nil).
	Logger *slog.Logger
}

// Client builds the authenticating HTTP client used for registries.
type Client struct {
	auth *auth.Client
	opts Options
	held *heldRecorder // nil without Options.HeldIndex
}

// NewClient prepares TLS trust and credentials once; share it between
// repositories so tokens are cached.
func NewClient(opts Options) (*Client, error) {
	transport := opts.Transport
	if transport == nil {
		t, err := newRegistryTransport(opts)
		if err != nil {
			return nil, err
		}
		transport = t
	}
	cred, err := credentialFunc(opts)
	if err != nil {
		return nil, err
	}
	ua := opts.UserAgent
	if ua == "" {
		ua = "oci-tofu"
	}
	c := &auth.Client{
		Client:     &http.Client{Transport: newPoliteTransport(transport, opts.Etiquette), CheckRedirect: keepCredentialsAtOrigin},
		Cache:      auth.NewCache(),
		Credential: cred,
		Header:     http.Header{"User-Agent": {ua}},
	}
	client := &Client{auth: c, opts: opts}
	if opts.HeldIndex != "" {
		if client.held, err = newHeldRecorder(opts); err != nil {
			return nil, err
		}
	}
	return client, nil
}

func credentialFunc(opts Options) (auth.CredentialFunc, error) {
	if opts.Username != "" || opts.Password != "" {
		cred := auth.Credential{Username: opts.Username, Password: opts.Password}
		return func(context.Context, string) (auth.Credential, error) { return cred, nil }, nil
	}
	store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading docker credentials: %w", err)
	}
	return credentials.Credential(store), nil
}

// Open opens the repository ref names, for reading and writing. An OCI
// layout directory is created when missing; its index.json names the
// tagged roots only (see layout). With a held-address index
// (Options.HeldIndex), a registry repository on another registry is
// refused (CheckHeldIndex).
func (c *Client) Open(ref Reference) (Repository, error) {
	if ref.Layout {
		return openLayout(ref.Repository, true)
	}
	if err := c.CheckHeldIndex(ref); err != nil {
		return nil, err
	}
	repo, err := c.remote(ref)
	if err != nil {
		return nil, err
	}
	repo.Client = pushScoped{client: c.auth, ref: repo.Reference, owner: c}
	return repo, nil
}

// OpenReadOnly opens ref for reading. An OCI layout that is missing, or
// not yet whole (being created), is reported as errdef.ErrNotFound, never
// created; readers and writers of one layout in this process share its
// store.
func (c *Client) OpenReadOnly(ctx context.Context, ref Reference) (ReadOnlyRepository, error) {
	if ref.Layout {
		return openLayout(ref.Repository, false)
	}
	return c.remote(ref)
}

// OneCredential reports whether the client sends one credential
// (Options.Username and Password) to every registry it talks to, rather
// than each registry's own from the docker credential store.
func (c *Client) OneCredential() bool { return c.opts.Username != "" || c.opts.Password != "" }

// DefaultCatalogPageSize is the page size asked of a registry's catalog,
// as tag lists ask for 1000.
const DefaultCatalogPageSize = 1000

// Registry is registry (host[:port]) for reading its catalog, with the
// client's credentials, TLS trust, etiquette and CatalogPageSize
// (package repolist lists it within bounds).
func (c *Client) Registry(registry string) (*remote.Registry, error) {
	reg, err := remote.NewRegistry(registry)
	if err != nil {
		return nil, fmt.Errorf("invalid registry %s: %w", registry, err)
	}
	reg.Client = c.auth
	reg.PlainHTTP = c.opts.PlainHTTP
	reg.RepositoryListPageSize = cmp.Or(max(c.opts.CatalogPageSize, 0), DefaultCatalogPageSize)
	return reg, nil
}

func (c *Client) remote(ref Reference) (*remote.Repository, error) {
	repo, err := remote.NewRepository(ref.Registry + "/" + ref.Repository)
	if err != nil {
		return nil, fmt.Errorf("invalid repository %s: %w", ref.Name(), err)
	}
	repo.Client = c.auth
	repo.PlainHTTP = c.opts.PlainHTTP
	repo.SkipReferrersGC = true
	// Ask for large tag-list pages; registries that page at 100 (ECR)
	// still answer with Link headers, which oras-go follows.
	repo.TagListPageSize = 1000
	return repo, nil
}

// maxRedirects bounds a redirect chain, as net/http does by default.
const maxRedirects = 10

// keepCredentialsAtOrigin is the registry client's redirect policy:
// credentials only ever go to the origin (scheme, host and port) that asked
// for them. Blob downloads are often redirected to storage elsewhere; the
// Authorization header (and cookies) are dropped on any hop that leaves
// the first request's origin, checked against the first request because
// net/http rebuilds each hop's headers from it. (oras-go ≥ v2.6.1 does the
// same; this keeps the rule whatever the library does.)
func keepCredentialsAtOrigin(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if stop, ok := req.Context().Value(storageStopKey{}).(*storageStop); ok && !sameOrigin(via[0].URL, req.URL) {
		stop.location = req.URL // FetchOrLocate: hand the storage URL out instead
		return http.ErrUseLastResponse
	}
	for _, r := range append(via[1:], req) {
		if !sameOrigin(via[0].URL, r.URL) {
			req.Header.Del("Authorization")
			req.Header.Del("Cookie")
			break
		}
	}
	return nil
}

// sameOrigin compares scheme, host and port (default ports filled in).
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(hostPort(a), hostPort(b))
}

func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return u.Host + ":443"
	case "http":
		return u.Host + ":80"
	}
	return u.Host
}

// pushScoped is the client of a remote repository opened for writing:
// every request it sends asks for pull and push rights at once, so the
// token fetched for the first read already allows the writes. Registries
// that deny reads of a repository that does not exist yet to a pull-only
// token (GHCR) then answer 404 as they should, and a push needs one token,
// not two. The scope travels in the request's context, which is where
// oras-go's auth client reads it, so it covers every call on the
// repository.
type pushScoped struct {
	client *auth.Client
	ref    registry.Reference
	owner  *Client // what a Commit records the repository with (RecordHeld)
}

func (c pushScoped) Do(req *http.Request) (*http.Response, error) {
	return c.client.Do(req.WithContext(withPushScope(req.Context(), c.ref)))
}

// withPushScope asks for pull and push rights on ref.
func withPushScope(ctx context.Context, ref registry.Reference) context.Context {
	return auth.AppendRepositoryScope(ctx, ref, auth.ActionPull, auth.ActionPush)
}
