// Package origin is a client for origins: registries speaking service
// discovery and the Provider Registry Protocol (docs/reference.md §8, §5)
// as OpenTofu uses them, and TofuDL APIs (§7). Every request, redirects
// included, is https, and on an allowed host when the client is
// restricted (guard.go); credentials (TF_TOKEN_*) go only to the registry
// host itself over https, never to download locations elsewhere; every
// answer is bounded.
package origin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/wire"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
)

// maxJSON bounds every protocol document read.
const maxJSON = oci.MaxDocument

// Client talks to origin registries.
type Client struct {
	HTTP *http.Client
	// Token returns the bearer token for a host, if any. DefaultToken reads
	// TF_TOKEN_* environment variables as OpenTofu does.
	Token func(host string) string

	mu        sync.Mutex
	discovery map[string]*url.URL
	allow     Hosts // nil: any https host (Restrict)
}

// NewClient makes a client with the given transport (nil: the default,
// trusting SSL_CERT_FILE) and OpenTofu-style TF_TOKEN_* credentials.
func NewClient(transport http.RoundTripper) *Client {
	if transport == nil {
		transport = http.DefaultTransport
	}
	return &Client{
		HTTP:      &http.Client{Transport: transport, Timeout: 10 * time.Minute},
		Token:     DefaultToken,
		discovery: map[string]*url.URL{},
	}
}

// DefaultToken reads TF_TOKEN_<host>, where dots become underscores and
// hyphens double underscores (OpenTofu's convention).
func DefaultToken(host string) string {
	name := strings.ReplaceAll(strings.ReplaceAll(host, "-", "__"), ".", "_")
	return os.Getenv("TF_TOKEN_" + name)
}

// Download is the answer of …/download/<os>/<arch>, with the URL it came
// from for resolving relative URLs.
type Download struct {
	wire.RegistryDownload
	base *url.URL
}

// Resolve makes a URL from the document absolute; it must be https (the
// client checks its host when it is requested).
func (d *Download) Resolve(ref string) (*url.URL, error) {
	u, err := d.base.Parse(ref)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "https" {
		return nil, fmt.Errorf("%w: the download answer names %s: origins are reached over https only", ErrRefused, RedactURL(u))
	}
	return u, nil
}

// ErrNotFound means the registry has no such provider or version.
var ErrNotFound = errors.New("not found")

// ProvidersBase discovers providers.v1 for a host (cached).
func (c *Client) ProvidersBase(ctx context.Context, host string) (*url.URL, error) {
	return c.serviceBase(ctx, host, "providers.v1")
}

// serviceBase discovers a service's base URL for a host (cached by host
// and service).
func (c *Client) serviceBase(ctx context.Context, host, service string) (*url.URL, error) {
	key := discoveryKey(host, service)
	c.mu.Lock()
	if u, ok := c.discovery[key]; ok {
		c.mu.Unlock()
		return u, nil
	}
	c.mu.Unlock()
	wk := &url.URL{Scheme: "https", Host: host, Path: "/.well-known/terraform.json"}
	var doc map[string]any
	if _, err := c.getJSON(ctx, wk, host, &doc); err != nil {
		return nil, fmt.Errorf("service discovery for %s: %w", host, err)
	}
	s, ok := doc[service].(string)
	if !ok {
		return nil, fmt.Errorf("%s does not offer %s", host, service)
	}
	base, err := wk.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%s: %s %q: %w", host, service, s, err)
	}
	if !strings.HasSuffix(base.Path, "/") {
		base.Path += "/"
	}
	c.mu.Lock()
	c.discovery[key] = base
	c.mu.Unlock()
	return base, nil
}

// discoveryKey names a host's service in the discovery cache; providers.v1
// keeps the bare host.
func discoveryKey(host, service string) string {
	if service == "providers.v1" {
		return host
	}
	return host + " " + service
}

// Versions lists a provider's versions.
func (c *Client) Versions(ctx context.Context, addr names.Provider) ([]*wire.RegistryVersion, error) {
	base, err := c.ProvidersBase(ctx, addr.Hostname)
	if err != nil {
		return nil, err
	}
	u := base.JoinPath(addr.Namespace, addr.Type, "versions")
	var doc wire.RegistryVersions
	if _, err := c.getJSON(ctx, u, addr.Hostname, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	return doc.Versions, nil
}

// Download asks where a platform's package is.
func (c *Client) Download(ctx context.Context, addr names.Provider, version string, p names.Platform) (*Download, error) {
	base, err := c.ProvidersBase(ctx, addr.Hostname)
	if err != nil {
		return nil, err
	}
	u := base.JoinPath(addr.Namespace, addr.Type, version, "download", p.OS, p.Arch)
	var d Download
	final, err := c.getJSON(ctx, u, addr.Hostname, &d.RegistryDownload)
	if err != nil {
		return nil, fmt.Errorf("%s %s %s: %w", addr, version, p, err)
	}
	d.base = final
	if d.OS != p.OS || d.Arch != p.Arch {
		return nil, fmt.Errorf("%s %s %s: registry answered for %s_%s", addr, version, p, d.OS, d.Arch)
	}
	if len(d.SHASum) != 64 || d.Filename == "" || strings.ContainsAny(d.Filename, "/\\") {
		return nil, fmt.Errorf("%s %s %s: malformed download answer (filename %q, shasum %q)", addr, version, p, d.Filename, d.SHASum)
	}
	return &d, nil
}

func (c *Client) getJSON(ctx context.Context, u *url.URL, host string, v any) (*url.URL, error) {
	resp, err := c.get(ctx, u, host)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxJSON+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxJSON {
		return nil, fmt.Errorf("%s: answer larger than %d bytes", u, maxJSON)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("%s: not a valid JSON answer: %w", u, err)
	}
	return resp.Request.URL, nil
}

func (c *Client) get(ctx context.Context, u *url.URL, host string) (*http.Response, error) {
	resp, err := c.do(ctx, u, host)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %w", u.Redacted(), ErrNotFound)
	case resp.StatusCode != http.StatusOK:
		resp.Body.Close()
		return nil, fmt.Errorf("%s: %s", u.Redacted(), resp.Status)
	}
	return resp, nil
}

// do sends a GET through the guard (guard.go): u and every redirect must
// be https on an allowed host, and host's credentials go only to host
// itself, over https.
func (c *Client) do(ctx context.Context, u *url.URL, host string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	return c.guarded(host).Do(req)
}

// FetchFile downloads u into w, reading at most max bytes.
func (c *Client) FetchFile(ctx context.Context, u *url.URL, host string, max int64, w io.Writer) error {
	resp, err := c.get(ctx, u, host)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, io.LimitReader(resp.Body, max+1))
	if err != nil {
		return fmt.Errorf("downloading %s: %w", u.Redacted(), err)
	}
	if n > max {
		return fmt.Errorf("downloading %s: larger than %d bytes", u.Redacted(), max)
	}
	return nil
}

// TofuAPI reads a TofuDL api.json.
func (c *Client) TofuAPI(ctx context.Context, u *url.URL) (*wire.TofuAPI, error) {
	var doc wire.TofuAPI
	if _, err := c.getJSON(ctx, u, u.Host, &doc); err != nil {
		return nil, err
	}
	return &doc, nil
}
