package proxy

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"time"
)

// Lifecycle says how ServeUntil serves and stops.
type Lifecycle struct {
	// ShutdownDelay is how long requests are still served, with /readyz
	// failing, after the context ends: time for load balancers and
	// Kubernetes endpoints to stop sending new ones.
	ShutdownDelay time.Duration
	// ShutdownTimeout bounds the rest of the shutdown: requests in flight,
	// then releases being pulled through.
	ShutdownTimeout time.Duration
	// ErrorLog receives the HTTP server's own errors (failed handshakes).
	ErrorLog *log.Logger
	// Started, when set, runs in the background once the listener is
	// served, with ServeUntil's context: a start-up check whose findings
	// are only logged (serve: preflight.Probe).
	Started func(context.Context)
}

// httpServer is the HTTP server ServeUntil runs, logging its errors to
// errorLog. An HTTP/2 connection to which nothing could be written for
// the stall timeout is closed: its writer is shared by all its streams,
// and each response's own deadline (as /mcp sets it) resets only its
// stream, so a client that never reads its socket held the connection
// until the HTTP/2 server gave up on its own, some 20 s later. The
// timeout restarts with every byte written, so a slow download is not cut.
func (s *Server) httpServer(errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          errorLog,
		HTTP2:             &http.HTTP2Config{WriteByteTimeout: s.opts.StallTimeout},
	}
}

// ServeUntil serves ln until ctx ends, then drains: /readyz fails at
// once, requests (new connections too) are served for ShutdownDelay, then
// the listener closes and, within ShutdownTimeout, requests in flight
// finish, then the server closes (Close).
func (s *Server) ServeUntil(ctx context.Context, ln net.Listener, lc Lifecycle) error {
	hs := s.httpServer(lc.ErrorLog)
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	if lc.Started != nil {
		go lc.Started(ctx)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.Drain()
	s.log.Info("draining: not ready, still serving", "shutdown_delay", lc.ShutdownDelay.String())
	time.Sleep(lc.ShutdownDelay)
	s.log.Info("shutting down")
	stop, cancel := context.WithTimeout(context.Background(), lc.ShutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(stop); err != nil {
		hs.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	if err := s.Close(stop); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
