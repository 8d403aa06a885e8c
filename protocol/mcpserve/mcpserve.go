// Package mcpserve runs the assistants' MCP server over stdio, for
// `oci-tofu mcp` (docs/assistants.md): the tools of protocol/assistant
// over the catalogue of an oci-tofu proxy reached as a client (a bearer
// token: a client token, a CI OIDC token, or a registry credential
// under --registry-decides), or over the registry itself, read with
// the caller's registry credentials by a server that does not listen,
// as `oci-tofu show` reads it.
package mcpserve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/assistant"
	"github.com/oci-tofu/oci-tofu/protocol/show"
)

// Options are what the server reads the catalogue with.
type Options struct {
	// Proxy is the proxy's URL (https://host[:port]); "" reads the
	// registry through Registry instead.
	Proxy string
	// TokenFile holds the bearer token sent to Proxy (its first line);
	// without it, Token; without either, the TF_TOKEN_… variable tofu
	// would send to its host, if set.
	TokenFile, Token string
	// CAFile holds the PEM roots Proxy's certificate is checked against
	// (""; the system's).
	CAFile string
	// RegistryHostname is the proxy's --registry-hostname, when it has
	// one (its own modules are then under that host, not Proxy's).
	RegistryHostname string
	// Registry reads the registry when Proxy is "" (show.Options: the
	// templates, the policy and the vulnerability database).
	Registry show.Options
	// Version is reported as the server's.
	Version string
}

// Run serves the tools over in and out until in ends or ctx is done.
func Run(ctx context.Context, opts Options, in io.ReadCloser, out io.WriteCloser) error {
	srv, closeSrv, err := newServer(opts)
	if err != nil {
		return err
	}
	defer closeSrv()
	return srv.Run(ctx, &mcp.IOTransport{Reader: in, Writer: out})
}

// newServer is the MCP server opts describe and what closes it.
func newServer(opts Options) (*mcp.Server, func(), error) {
	if opts.Proxy != "" {
		if opts.Registry.ProviderTemplate != "" || opts.Registry.ModuleTemplate != "" || opts.Registry.Policy != "" || opts.Registry.VulnDB != "" {
			return nil, nil, errors.New("--proxy reads the proxy's catalogue, judged by its own templates and policy: leave out --provider-template, --module-template, --policy and --vuln-db")
		}
		cat, err := remote(opts)
		if err != nil {
			return nil, nil, err
		}
		return assistant.NewServer(cat, assistant.Options{Version: opts.Version}), func() {}, nil
	}
	if opts.Registry.ProviderTemplate == "" && opts.Registry.ModuleTemplate == "" {
		return nil, nil, errors.New("give --proxy URL, or --provider-template and/or --module-template to read the registry")
	}
	if err := fixedRegistries(opts.Registry); err != nil {
		return nil, nil, err
	}
	srv, err := show.NewServer(opts.Registry)
	if err != nil {
		return nil, nil, err
	}
	// Without a proxy's hostname, no proxy serves these addresses: the
	// usage is the registry's oci:// source.
	direct := opts.RegistryHostname == ""
	return srv.Assistant(opts.RegistryHostname, assistant.Options{Version: opts.Version, Direct: direct}),
		func() { srv.Close(context.Background()) }, nil
}

// fixedRegistries refuses a template whose registry host is, or holds,
// a placeholder (${hostname}/…): a tool argument would then choose the
// host read, and the registry credentials (--username goes to every
// registry) would go to whatever host an assistant was told to name.
func fixedRegistries(opts show.Options) error {
	for flag, raw := range map[string]string{"--provider-template": opts.ProviderTemplate, "--module-template": opts.ModuleTemplate} {
		if raw == "" {
			continue
		}
		parse := repotemplate.ParseModuleTemplate
		if flag == "--provider-template" {
			parse = repotemplate.ParseProviderTemplate
		}
		tpl, err := parse(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		if host, _ := tpl.ListPrefix(); host == "" {
			return fmt.Errorf("%s %q: mcp reads one registry, named in the template: a placeholder such as ${hostname} in its registry host would let a tool's argument choose the host your registry credentials go to", flag, raw)
		}
	}
	return nil
}

// remote is the catalogue of the proxy at opts.Proxy.
func remote(opts Options) (*assistant.Remote, error) {
	u, err := url.Parse(opts.Proxy)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("--proxy %q: want https://HOST[:PORT][/PREFIX]", opts.Proxy)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if opts.CAFile != "" {
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("--proxy-ca-file: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--proxy-ca-file %s: no PEM certificate in it", opts.CAFile)
		}
	}
	token, err := tokenOf(opts, u.Host)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 60 * time.Second,
		Transport: &http.Transport{TLSClientConfig: tc, Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 4},
		// The token goes to the proxy only: a redirect is not followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &assistant.Remote{URL: u, Client: client, Token: token, RegistryHostname: opts.RegistryHostname}, nil
}

// tofuTokenVariable is the environment variable tofu reads a host's
// token from: TF_TOKEN_ and the host, dots as underscores and dashes as
// double underscores (its port left out: the variable names a host).
func tofuTokenVariable(host string) string {
	h := strings.ToLower(host)
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.HasSuffix(h, "]") {
		h = h[:i]
	}
	h = strings.ReplaceAll(strings.ReplaceAll(h, "-", "__"), ".", "_")
	return "TF_TOKEN_" + h
}

// tokenOf is the bearer token opts give for the proxy at host.
func tokenOf(opts Options, host string) (string, error) {
	if opts.TokenFile != "" {
		b, err := os.ReadFile(opts.TokenFile)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		return strings.TrimSpace(line), nil
	}
	if opts.Token != "" {
		return opts.Token, nil
	}
	return os.Getenv(tofuTokenVariable(host)), nil
}
