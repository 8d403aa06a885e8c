package main

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Check statuses, from good to bad.
const (
	checkOK      = "ok"
	checkWarning = "warning"
	checkError   = "error"
)

// checkResult is one line of `serve --check`.
type checkResult struct {
	// Target is what was checked: "providers --provider-template",
	// "providers tofu.rc:3:14", "modules", "OpenTofu releases", "server TLS".
	Target string `json:"target"`
	// Mapping is the template or repository configured.
	Mapping string `json:"mapping,omitempty"`
	// Registry is the registry host (or OCI layout) the mapping reaches.
	Registry string `json:"registry,omitempty"`
	// Credentials says whose: "anonymous", "--username U", "docker config (U)".
	Credentials string `json:"credentials,omitempty"`
	// Repository is the sample repository looked for, if any.
	Repository string `json:"repository,omitempty"`
	Status     string `json:"status"`
	Detail     string `json:"detail"`
	Hint       string `json:"hint,omitempty"`
}

// checker runs the checks of one configuration with one registry client.
type checker struct {
	client  *oci.Client
	opts    proxy.Options
	hc      hintContext
	timeout time.Duration
	pinged  map[string]error // registry (or layout) → ping result
}

func newChecker(client *oci.Client, opts proxy.Options, template string) *checker {
	return &checker{
		client:  client,
		opts:    opts,
		hc:      registryHints(opts.Registry, template),
		timeout: max(opts.UpstreamTimeout, time.Second),
		pinged:  map[string]error{},
	}
}

// runCheck is `serve --check`: every mapping resolved against its
// registry, the server's certificate and keys; a table or JSON; exit
// status 1 when any check failed.
func runCheck(c *cli.Context, opts proxy.Options) error {
	template := "--provider-template"
	if c.String("config") != "" && c.String("provider-template") == "" {
		template = "--config"
	}
	client, err := oci.NewClient(opts.Registry)
	if err != nil {
		return err
	}
	ck := newChecker(client, opts, template)
	var results []checkResult
	results = append(results, checkServerTLS(c))
	samples, err := parseProviderSamples(c.StringSlice("check-provider"))
	if err != nil {
		return usageError(c, "--check-provider: %v", err)
	}
	mods, err := parseModuleSamples(c.StringSlice("check-module"))
	if err != nil {
		return usageError(c, "--check-module: %v", err)
	}
	results = append(results, ck.providers(c.Context, samples)...)
	results = append(results, ck.modules(c.Context, mods)...)
	if opts.TofuRepository != nil {
		results = append(results, ck.tofuRepository(c.Context, *opts.TofuRepository))
	}
	failed := 0
	for _, r := range results {
		if r.Status == checkError {
			failed++
		}
	}
	if c.Bool("json") {
		rep := &reporter{out: c.App.Writer, json: true}
		if err := rep.result(map[string]any{"ok": failed == 0, "checks": results}, ""); err != nil {
			return err
		}
	} else {
		printChecks(c.App.Writer, results)
	}
	if failed > 0 {
		return fmt.Errorf("%s failed", plural(failed, "check"))
	}
	return nil
}

// printChecks prints the table, then the hint of each failure.
func printChecks(w io.Writer, results []checkResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STATUS\tWHAT\tREGISTRY\tCREDENTIALS\tDETAIL")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Status, r.Target, orDash(r.Registry), orDash(r.Credentials), r.Detail)
	}
	tw.Flush()
	for _, r := range results {
		if r.Hint != "" {
			fmt.Fprintf(w, "hint (%s): %s\n", r.Target, r.Hint)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// providers checks each provider mapping: its registry, and a sample
// repository when a --check-provider address (or the mapping's include,
// naming one provider) gives one.
func (ck *checker) providers(ctx context.Context, samples []names.Provider) []checkResult {
	var out []checkResult
	for _, m := range ck.opts.ProviderMappings {
		res := checkResult{Target: "providers " + m.Source, Mapping: m.Template.String()}
		only := store.ProviderMappings{m}
		var sample *names.Provider
		for _, p := range append(samples, includedProvider(m.Include)...) {
			if _, err := only.Map(p); err == nil {
				sample = &p
				break
			}
		}
		example := names.Provider{Hostname: "example.com", Namespace: "example", Type: "example"}
		if sample != nil {
			example = *sample
		}
		ref, err := m.Template.Expand(example.TemplateValues())
		if err != nil {
			res.Status, res.Detail = checkError, "the template does not give a repository: "+err.Error()
			out = append(out, res)
			continue
		}
		out = append(out, ck.repository(ctx, res, ref, sample != nil, "provider "+example.String()))
	}
	return out
}

// includedProvider is the provider an include list names when it names
// exactly one, without wildcards.
func includedProvider(include []string) []names.Provider {
	if len(include) != 1 || strings.Contains(include[0], "*") {
		return nil
	}
	p, err := names.ParseProvider(include[0])
	if err != nil {
		return nil
	}
	return []names.Provider{p}
}

// moduleSample is a module address given to --check-module.
type moduleSample struct {
	host string
	mod  names.Module
}

func parseProviderSamples(list []string) ([]names.Provider, error) {
	var out []names.Provider
	for _, s := range list {
		p, err := names.ParseProvider(s)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func parseModuleSamples(list []string) ([]moduleSample, error) {
	var out []moduleSample
	for _, s := range list {
		parts := strings.Split(s, "/")
		if len(parts) != 4 {
			return nil, fmt.Errorf("module address %q: want HOST/NAMESPACE/NAME/SYSTEM", s)
		}
		m, err := names.ParseModule(parts[1], parts[2], parts[3])
		if err != nil {
			return nil, err
		}
		out = append(out, moduleSample{host: strings.ToLower(parts[0]), mod: m})
	}
	return out, nil
}

// modules checks the module template like a provider mapping.
func (ck *checker) modules(ctx context.Context, samples []moduleSample) []checkResult {
	tpl := ck.opts.ModuleTemplate
	if tpl == nil {
		return nil
	}
	res := checkResult{Target: "modules --module-template", Mapping: tpl.String()}
	sample := moduleSample{host: "example.com", mod: names.Module{Namespace: "example", Name: "example", System: "example"}}
	if len(samples) > 0 {
		sample = samples[0]
	}
	ref, err := tpl.Expand(sample.mod.TemplateValues(sample.host))
	if err != nil {
		res.Status, res.Detail = checkError, "the template does not give a repository: "+err.Error()
		return []checkResult{res}
	}
	return []checkResult{ck.repository(ctx, res, ref, len(samples) > 0, "module "+sample.host+"/"+sample.mod.String())}
}

// tofuRepository checks the repository of OpenTofu releases.
func (ck *checker) tofuRepository(ctx context.Context, ref oci.Reference) checkResult {
	return ck.repository(ctx, checkResult{Target: "OpenTofu releases --tofu-repository", Mapping: ref.String()}, ref, true, "OpenTofu releases")
}

// repository pings ref's registry and, when sampled, lists the versions
// of the repository itself.
func (ck *checker) repository(ctx context.Context, res checkResult, ref oci.Reference, sampled bool, what string) checkResult {
	res.Registry = ref.Registry
	pingRef := ref
	if ref.Layout {
		// A layout's "registry" is the directory the template starts with.
		pingRef.Repository = layoutRoot(strings.TrimPrefix(res.Mapping, oci.LayoutPrefix))
		res.Registry = oci.LayoutPrefix + pingRef.Repository
	} else {
		res.Credentials = orAnonymous(ck.client.CredentialSource(ctx, ref.Registry))
	}
	if err := ck.ping(ctx, pingRef); err != nil {
		if ref.Layout && oci.IsNotFound(err) {
			res.Status, res.Detail = checkWarning, "the OCI layout directory "+pingRef.Repository+" does not exist (yet)"
			return res
		}
		return ck.failed(res, err, "the registry does not answer as expected: ")
	}
	if !sampled {
		res.Status, res.Detail = checkOK, "the registry answers; give --check-provider or --check-module to look for a repository too"
		if ref.Layout {
			res.Detail = "the layout root exists; give --check-provider or --check-module to look for a repository too"
		}
		return res
	}
	res.Repository = ref.Name()
	ctx, cancel := context.WithTimeout(ctx, ck.timeout)
	defer cancel()
	repo, err := ck.client.OpenReadOnly(ctx, ref)
	var versions names.VersionList
	if err == nil {
		versions, err = oci.ListVersions(ctx, repo)
	}
	switch {
	case err == nil:
		res.Status, res.Detail = checkOK, fmt.Sprintf("%s: %s has %s", what, ref.Name(), plural(len(versions), "version"))
	case oci.IsNotFound(err):
		res.Status, res.Detail = checkWarning, fmt.Sprintf("%s: %s does not exist (nothing pushed there yet, or another template was meant)", what, ref.Name())
	default:
		return ck.failed(res, err, what+": ")
	}
	return res
}

// ping asks each registry once.
func (ck *checker) ping(ctx context.Context, ref oci.Reference) error {
	key := ref.Registry
	if ref.Layout {
		key = oci.LayoutPrefix + ref.Repository
	}
	if err, done := ck.pinged[key]; done {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, ck.timeout)
	defer cancel()
	err := ck.client.Ping(ctx, ref)
	ck.pinged[key] = err
	return err
}

func (ck *checker) failed(res checkResult, err error, prefix string) checkResult {
	res.Status, res.Detail, res.Hint = checkError, prefix+err.Error(), hint(err, ck.hc)
	return res
}

func orAnonymous(s string) string {
	if s == "" {
		return "anonymous"
	}
	return s
}

// layoutRoot is the first directory of a layout path (the part a
// template cannot vary), for display.
func layoutRoot(p string) string {
	if i := strings.Index(p, "${"); i >= 0 {
		return p[:i]
	}
	return p
}

// checkServerTLS checks the server certificate serve would use.
func checkServerTLS(c *cli.Context) checkResult {
	res := checkResult{Target: "server TLS"}
	certFile, keyFile := c.String("tls-cert"), c.String("tls-key")
	switch {
	case c.Bool("insecure-no-tls"):
		res.Status, res.Detail = checkWarning, "plain HTTP (--insecure-no-tls): only behind a proxy or ingress that terminates TLS, as clients require HTTPS"
	case c.Bool("self-signed"):
		res.Status, res.Detail = checkWarning, "a throw-away self-signed certificate (--self-signed) is made at start: for trials only"
	case certFile == "" && keyFile == "":
		res.Status, res.Detail = checkError, "no certificate: give --tls-cert and --tls-key (or --self-signed for trials, --insecure-no-tls behind a TLS-terminating proxy)"
	default:
		cert, err := loadServerCert(certFile, keyFile)
		if err != nil {
			res.Status, res.Detail = checkError, err.Error()
			return res
		}
		leaf, err := x509.ParseCertificate(cert.Certificate[0])
		if err != nil {
			res.Status, res.Detail = checkError, "reading the TLS certificate: "+err.Error()
			return res
		}
		res.Mapping = certFile
		res.Status = checkOK
		res.Detail = fmt.Sprintf("valid for %s until %s", strings.Join(append(leaf.DNSNames, ipStrings(leaf)...), ", "), leaf.NotAfter.UTC().Format(time.DateOnly))
		if time.Until(leaf.NotAfter) < 14*24*time.Hour {
			res.Status = checkWarning
			res.Detail += " (expires within two weeks)"
		}
		if time.Now().After(leaf.NotAfter) {
			res.Status, res.Detail = checkError, "the certificate expired on "+leaf.NotAfter.UTC().Format(time.DateOnly)
		}
	}
	return res
}

func ipStrings(c *x509.Certificate) []string {
	var out []string
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	return out
}

// probeRegistries checks, once at start, that every registry the
// configuration names answers and accepts the proxy's credentials, and
// logs what it found (with the hint for a failure): a proxy without
// credentials says so at start, not at its first client's request.
func probeRegistries(ctx context.Context, client *oci.Client, opts proxy.Options, logger *slog.Logger) {
	ck := newChecker(client, opts, "")
	results := ck.providers(ctx, nil)
	results = append(results, ck.modules(ctx, nil)...)
	if opts.TofuRepository != nil {
		results = append(results, ck.tofuRepository(ctx, *opts.TofuRepository))
	}
	for _, r := range results {
		attrs := []any{"what", r.Target, "registry", r.Registry, "credentials", r.Credentials}
		if r.Status == checkError {
			logger.Warn("registry check failed", append(attrs, "error", r.Detail, "hint", r.Hint)...)
		} else {
			logger.Info("registry check", append(attrs, "status", r.Status, "detail", r.Detail)...)
		}
	}
}
