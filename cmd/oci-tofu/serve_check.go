package main

import (
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/report"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/protocol/preflight"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
)

// runCheck is `serve --check`: every mapping resolved against its
// registry (protocol/preflight), the server's certificate and keys; a
// table or JSON; exit status 1 when any check failed.
func runCheck(c *cli.Context, opts proxy.Options) error {
	template := "--provider-template"
	if c.String("config") != "" && c.String("provider-template") == "" {
		template = "--config"
	}
	client, err := oci.NewClient(opts.Registry)
	if err != nil {
		return err
	}
	results := []preflight.Result{checkServerTLS(c)}
	var samples preflight.Samples
	if samples.Providers, err = parseEach(c.StringSlice("check-provider"), names.ParseProvider); err != nil {
		return usageError(c, "--check-provider: %v", err)
	}
	if samples.Modules, err = parseEach(c.StringSlice("check-module"), preflight.ParseModuleAddress); err != nil {
		return usageError(c, "--check-module: %v", err)
	}
	results = append(results, preflight.Registries(c.Context, preflightConfig(client, opts, template), samples)...)
	results = append(results, policyChecks(c, opts)...)
	failed := preflight.Failed(results)
	if c.Bool("json") {
		rep := &report.Reporter{Out: c.App.Writer, JSON: true}
		if err := rep.Result(map[string]any{"ok": failed == 0, "checks": results}, ""); err != nil {
			return err
		}
	} else {
		preflight.WriteTable(c.App.Writer, results)
	}
	if failed > 0 {
		return fmt.Errorf("%s failed", names.Plural(failed, "check"))
	}
	return nil
}

// policyChecks check the policy (or, without one, the clients of
// --auth-token-file), and say what --registry-decides does.
func policyChecks(c *cli.Context, opts proxy.Options) []preflight.Result {
	var results []preflight.Result
	if pol := opts.Policy.Current(); pol != nil {
		results = preflight.Policy(preflight.PolicyConfig{Policy: pol, File: c.String("policy"),
			Providers: opts.ProviderMappings, Modules: len(opts.ModuleMappings) > 0, Tofu: opts.TofuRepository != nil,
			OperatorTokens: len(opts.AuthTokens)})
	} else if len(opts.AuthTokens) > 0 {
		results = preflight.Clients(preflight.PolicyConfig{OperatorTokens: len(opts.AuthTokens)})
	}
	if opts.RegistryDecides {
		results = append(results, preflight.RegistryDecides(opts.RegistryConfirmTTL, opts.PullThrough != nil))
	}
	return results
}

// preflightConfig is what the registry checks need of serve's options,
// labelled with the flags that configured each mapping; template is the
// flag a "nothing there" hint names ("" for none).
func preflightConfig(client *oci.Client, opts proxy.Options, template string) preflight.Config {
	hc := registryHints(opts.Registry, template)
	return preflight.Config{
		Client:          client,
		Providers:       opts.ProviderMappings,
		ModuleMappings:  opts.ModuleMappings,
		ModuleLabel:     "--module-template",
		TofuRepository:  opts.TofuRepository,
		TofuLabel:       "--tofu-repository",
		Timeout:         opts.Store.Timeout,
		Hint:            func(err error) string { return hint(err, hc) },
		UnsampledAdvice: "give --check-provider or --check-module to look for a repository too",
	}
}

// checkServerTLS checks the server certificate serve would use: the
// choice of flags here, the certificate itself in protocol/preflight.
func checkServerTLS(c *cli.Context) preflight.Result {
	res := preflight.Result{Target: preflight.TLSTarget}
	certFile, keyFile := c.String("tls-cert"), c.String("tls-key")
	switch {
	case c.Bool("insecure-no-tls"):
		res.Status, res.Detail = preflight.StatusWarning, "plain HTTP (--insecure-no-tls): only behind a proxy or ingress that terminates TLS, as clients require HTTPS"
	case c.Bool("self-signed"):
		res.Status, res.Detail = preflight.StatusWarning, "a throw-away self-signed certificate (--self-signed) is made at start: for trials only"
	case certFile == "" && keyFile == "":
		res.Status, res.Detail = preflight.StatusError, "no certificate: give --tls-cert and --tls-key (or --self-signed for trials, --insecure-no-tls behind a TLS-terminating proxy)"
	default:
		r, err := loadServerCert(certFile, keyFile)
		if err != nil {
			res.Status, res.Detail = preflight.StatusError, err.Error()
			return res
		}
		return preflight.Certificate(*r.Certificate(), certFile, time.Now())
	}
	return res
}
