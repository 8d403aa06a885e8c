package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// sharedCacheFlags are serve's --shared-cache and its timeout (docs/proxy.md, "A fleet:
// shared state on Redis").
func sharedCacheFlags() []cli.Flag {
	return []cli.Flag{&cli.StringFlag{Name: "shared-cache", Usage: "Redis `URL` the replicas of a fleet share state through (the page's record of what the fleet served; with pull-through, who pulls a release and what was stored or failed), redis://[user:pass@]host:port[/db] or rediss://… (TLS, trusting --ca-file too); with it down, each replica works on its own", EnvVars: []string{"OCI_TOFU_SHARED_CACHE"}},
		&cli.DurationFlag{Name: "shared-cache-timeout", Value: sharedstate.DefaultOpTimeout, Usage: "the `DURATION` one operation on --shared-cache may take before the replica goes on alone (raise it for a Redis farther away than a few milliseconds)", EnvVars: []string{"OCI_TOFU_SHARED_CACHE_TIMEOUT"}},
	}
}

// readSharedCache opens --shared-cache, when given (it connects on first
// use: a Redis down at start-up is a Redis down later), and says at start
// what it is used for. readSharedCache comes after pullThroughOptions.
func readSharedCache(c *cli.Context, opts *proxy.Options) error {
	u := c.String("shared-cache")
	if u == "" {
		return nil
	}
	transport, err := oci.NewTransport(oci.Options{CAFile: c.String("ca-file")})
	if err != nil {
		return err
	}
	s, err := sharedstate.OpenRedis(sharedstate.RedisOptions{URL: u, TLS: transport.TLSClientConfig, Logger: opts.Logger, OpTimeout: c.Duration("shared-cache-timeout")})
	if err != nil {
		return fmt.Errorf("--shared-cache: %w", err)
	}
	opts.Shared = s
	opts.Logger.Info("shared cache: "+sharedCacheUses(opts), "shared_cache", sharedstate.RedactURL(u))
	return nil
}

// sharedCacheUses says what the replicas share through --shared-cache.
func sharedCacheUses(opts *proxy.Options) string {
	if opts.PullThrough == nil {
		return "the page's record of what the fleet served is shared with the other replicas (without pull-through, nothing else is)"
	}
	return "pull-through (who pulls a release, what was stored, what failed) and the page's record of what the fleet served are shared with the other replicas"
}
