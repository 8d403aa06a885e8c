package main

import (
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/sharedstate"
)

// sharedCachePasswordEnv holds the Redis password, so that it need not be
// in the URL: a command line is visible to every local user (ps).
const sharedCachePasswordEnv = "OCI_TOFU_SHARED_CACHE_PASSWORD"

// openSharedCache opens the Redis at url (serve --shared-cache, usage
// --shared-cache), with the password of sharedCachePasswordEnv, trusting
// --ca-file too; each operation may take timeout.
func openSharedCache(c *cli.Context, url string, logger *slog.Logger, timeout time.Duration) (*sharedstate.Redis, error) {
	transport, err := oci.NewTransport(oci.Options{CAFile: c.String("ca-file")})
	if err != nil {
		return nil, err
	}
	r, err := sharedstate.OpenRedis(sharedstate.RedisOptions{URL: url, Password: os.Getenv(sharedCachePasswordEnv), TLS: transport.TLSClientConfig, Logger: logger, OpTimeout: timeout})
	if err != nil {
		return nil, fmt.Errorf("--shared-cache: %w", err)
	}
	return r, nil
}
