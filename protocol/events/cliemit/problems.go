package cliemit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// problems tells stderr the dispatcher's warnings (a delivery failed, an
// endpoint answered 410 Gone, events dropped at Close), one line each,
// and counts them. Its lines name subscriptions and endpoints' hosts,
// never their URLs' paths (webhook.Subscription.Endpoint).
type problems struct {
	mu sync.Mutex
	w  io.Writer
	n  int
}

func (p *problems) logger() *slog.Logger { return slog.New(problemHandler{p: p}) }

func (p *problems) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

// line writes one warning and counts it.
func (p *problems) line(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	fmt.Fprintln(p.w, s)
}

// problemHandler is the slog.Handler of problems: warnings and errors
// only, as "warning: MESSAGE (key=value, ...)".
type problemHandler struct {
	p     *problems
	attrs []slog.Attr
}

func (h problemHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h problemHandler) Handle(_ context.Context, r slog.Record) error {
	var kv []string
	add := func(a slog.Attr) bool {
		kv = append(kv, a.Key+"="+a.Value.String())
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	line := "warning: " + r.Message
	if len(kv) > 0 {
		line += " (" + strings.Join(kv, ", ") + ")"
	}
	h.p.line(line)
	return nil
}

func (h problemHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return problemHandler{p: h.p, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

// WithGroup is not used by the dispatcher: attributes stay flat.
func (h problemHandler) WithGroup(string) slog.Handler { return h }
