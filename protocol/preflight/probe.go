package preflight

import (
	"context"
	"log/slog"
)

// Probe checks, once, that every registry cfg names answers and accepts
// the server's credentials, and logs what it found, with the hint for a
// failure: serve runs it at start (proxy.Lifecycle.Started), so that a
// proxy without credentials says so then, not at its first client's
// request.
func Probe(ctx context.Context, cfg Config, logger *slog.Logger) {
	for _, r := range Registries(ctx, cfg, Samples{}) {
		attrs := []any{"what", r.Target, "registry", r.Registry, "credentials", r.Credentials}
		switch r.Status {
		case StatusError:
			logger.Warn("registry check failed", append(attrs, "error", r.Detail, "hint", r.Hint)...)
		case StatusWarning:
			logger.Warn("registry check", append(attrs, "status", r.Status, "detail", r.Detail, "hint", r.Hint)...)
		default:
			logger.Info("registry check", append(attrs, "status", r.Status, "detail", r.Detail)...)
		}
	}
}
