package proxy

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oci-tofu/oci-tofu/protocol/assistant"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/respond"
)

// MCP are the options of the assistants' endpoint (serve --mcp;
// docs/assistants.md).
type MCP struct {
	// Loopback: the proxy listens on a loopback address only. Elsewhere
	// the endpoint needs the proxy's own TLS (not PlainHTTP) and client
	// authentication.
	Loopback, PlainHTTP bool
	// Origins are the browser origins allowed beside the proxy's own
	// (--mcp-allow-origin).
	Origins []string
}

// checkMCP refuses an endpoint anyone on the network could reach
// unauthenticated, or over plain HTTP.
func (s *Server) checkMCP() error {
	m := s.opts.MCP
	if m == nil || m.Loopback {
		return nil
	}
	if m.PlainHTTP {
		return errors.New("--mcp on an address other than loopback needs the proxy's own TLS, not --insecure-no-tls")
	}
	if !s.clientAuth {
		return errors.New("--mcp on an address other than loopback needs client authentication (--auth-token-file, the policy's clients or --registry-decides)")
	}
	return nil
}

// routeMCP serves the tools over the catalogue at assistant.Path, with
// the protocols' client authentication and budgets: each tool reads the
// catalogue as the caller (respond.ReaderOf). A response, refusals
// included, the client has not taken within the stall timeout of its
// first byte is dropped with its connection (writeDeadline).
func (s *Server) routeMCP() {
	if s.opts.MCP == nil || s.catalog == nil {
		return
	}
	srv := s.Assistant("", assistant.Options{})
	h := assistant.HTTPHandler(srv, s.opts.MCP.Origins)
	s.mux.Handle(assistant.Path, writeDeadline(s.instrument("mcp", s.Authenticate(h)), s.opts.StallTimeout))
}

// writeDeadline bounds the writing of h's responses to d from the
// moment each starts: a client that sends requests and never reads the
// answers would otherwise hold a goroutine and its connection for as
// long as it likes, its writes blocked (net/http clears the deadline
// once the response is done, so the connection's next request starts
// unbounded).
func writeDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&deadlineWriter{ResponseWriter: w, d: d}, r)
	})
}

// deadlineWriter sets the write deadline of its response when the
// header is written, before the first byte goes out.
type deadlineWriter struct {
	http.ResponseWriter
	d   time.Duration
	set bool
}

func (w *deadlineWriter) WriteHeader(code int) {
	if !w.set && code >= http.StatusOK {
		w.set = true
		http.NewResponseController(w.ResponseWriter).SetWriteDeadline(time.Now().Add(w.d))
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	if !w.set {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap gives http.ResponseController the underlying writer.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Assistant is the MCP server of the tools over this server's
// catalogue; a tool call whose context carries no Host
// (assistant.WithRequestHost) reads it as a request to defaultHost
// would ("": localhost). opts.Version "" is the server's.
func (s *Server) Assistant(defaultHost string, opts assistant.Options) *mcp.Server {
	host := defaultHost
	if host == "" {
		host = "localhost"
	}
	if opts.Version == "" {
		opts.Version = s.opts.Version
	}
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) })
	if s.catalog != nil {
		h = s.catalog
	}
	cat := &assistant.Local{Handler: h, DefaultHost: host,
		Hostname: func(host string) (string, error) { return s.out.RegistryHostname(&http.Request{Host: host}) },
		Spend:    s.spendOnRead}
	return assistant.NewServer(cat, opts)
}

// spendOnRead spends a request of the budget of the policy file's
// client ctx carries, if any (a tool reading many documents costs what
// reading them from the catalogue would).
func (s *Server) spendOnRead(ctx context.Context) error {
	if c, ok := respond.ReaderOf(ctx).(scoped); ok {
		return s.budgets.spend(c.Client)
	}
	return nil
}
