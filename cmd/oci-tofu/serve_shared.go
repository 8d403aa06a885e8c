package main

import (
	"log/slog"
	"net"
	"net/url"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/protocol/proxy"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// sharedCacheFlags are serve's --shared-cache and its timeout (docs/proxy.md, "A fleet:
// shared state on Redis").
func sharedCacheFlags() []cli.Flag {
	return []cli.Flag{&cli.StringFlag{Name: "shared-cache", Usage: "Redis `URL` the replicas of a fleet share state through (the page's record of what the fleet served; with pull-through, who pulls a release and what was stored or failed), rediss://[user@]host:port[/db] (TLS, trusting --ca-file too; recommended) or redis://…, the password in OCI_TOFU_SHARED_CACHE_PASSWORD rather than the URL (a command line is visible in ps); with it down, each replica works on its own", EnvVars: []string{"OCI_TOFU_SHARED_CACHE"}},
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
	s, err := openSharedCache(c, u, opts.Logger, c.Duration("shared-cache-timeout"))
	if err != nil {
		return err
	}
	opts.Shared = s
	opts.Logger.Info("shared cache: "+sharedCacheUses(opts), "shared_cache", sharedstate.RedactURL(u))
	warnSharedCacheExposure(opts.Logger, u)
	return nil
}

// warnSharedCacheExposure warns of a Redis password on the command line
// and of a Redis reached without TLS (docs/proxy.md, "What is never
// trusted").
func warnSharedCacheExposure(log *slog.Logger, raw string) {
	u, err := url.Parse(raw)
	if err != nil {
		return
	}
	if _, ok := u.User.Password(); ok && os.Getenv("OCI_TOFU_SHARED_CACHE") != raw {
		log.Warn("shared cache: the --shared-cache URL on the command line carries the Redis password, which every local user can read (ps): set " + sharedCachePasswordEnv + " instead")
	}
	if u.Scheme == "redis" && !isLoopback(u.Hostname()) {
		log.Warn("shared cache: Redis is reached without TLS: whoever is on the network path reads the password and the records, and can answer for Redis; use rediss:// when it crosses hosts", "shared_cache", sharedstate.RedactURL(raw))
	}
}

// sharedCacheUses says what the replicas share through --shared-cache.
func sharedCacheUses(opts *proxy.Options) string {
	if opts.PullThrough == nil {
		return "the page's record of what the fleet served is shared with the other replicas (without pull-through, nothing else is)"
	}
	return "pull-through (who pulls a release, what was stored, what failed) and the page's record of what the fleet served are shared with the other replicas"
}

// isLoopback says whether host is this machine (a Redis beside the
// replica, where TLS protects nothing).
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
