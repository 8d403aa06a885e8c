package main

import (
	"fmt"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/convert/policy"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
	"github.com/oci-tofu/oci-tofu/protocol/source/gate"
)

// policyRegistryFlags are policy test's flags for deciding against the
// registry: serve's mappings, the keys serve trusts for ingest times, and
// the registry's credentials.
func policyRegistryFlags() []cli.Flag {
	flags := append(servedSourceFlags(), requireAttestationFlag(), trustedRootFlag(), requireNotationFlag(), vulnDBFlag())
	return append(flags, registryFlags()...)
}

// againstRegistry reports whether policy test was given a mapping, and so
// decides against the registry.
func againstRegistry(c *cli.Context) bool {
	for _, f := range []string{"provider-template", "config", "tofu-repository"} {
		if c.String(f) != "" {
			return true
		}
	}
	return len(c.StringSlice("module-template")) > 0
}

// policyServer is a server over serve's mappings and registry options,
// with policy p in force, that decides as serve does (proxy.ExplainPolicy)
// without listening.
func policyServer(c *cli.Context, p *policy.Policy) (*proxy.Server, error) {
	logger := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := proxy.Options{Logger: logger, Version: version, Policy: policy.NewLive(p)}
	if err := readServedSources(c, &opts); err != nil { // serve.go
		return nil, err
	}
	ro, err := registryOptions(c)
	if err != nil {
		return nil, err
	}
	opts.Registry = ro
	if err := readRequireAttestation(c, &opts, logger); err != nil { // serve_attest.go: trusted ingest keys
		return nil, err
	}
	if err := readVulnDB(c, &opts, logger); err != nil { // policy.go
		return nil, err
	}
	return proxy.New(opts)
}

// registryDecisions are the server's decisions on q: on its version, or
// on every version the registry holds when it names none.
func registryDecisions(c *cli.Context, srv *proxy.Server, q gate.Query) ([]gate.Query, error) {
	verdicts, err := srv.ExplainPolicy(c.Context, q.Kind, q.Address, q.Version)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", q.Kind, q.Address, err)
	}
	return gate.Queries(q, verdicts), nil
}
