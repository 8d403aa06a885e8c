package servercreds

import (
	"context"
	"log"
	"log/slog"
	"strings"
)

// HandshakeLog is the ErrorLog for an http.Server: its lines go to logger
// at WARN, and a failed TLS handshake is logged as one, with the client's
// address, the error, and — when the error is what a client that does not
// trust the certificate causes ("bad certificate" from Go clients such as
// tofu and terraform, "unknown certificate authority", or "bad record MAC"
// from curl and OpenSSL) — a hint saying so.
func HandshakeLog(logger *slog.Logger) *log.Logger {
	return log.New(handshakeWriter{logger}, "", 0)
}

type handshakeWriter struct{ log *slog.Logger }

const handshakePrefix = "http: TLS handshake error from "

func (w handshakeWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	rest, ok := strings.CutPrefix(line, handshakePrefix)
	if !ok {
		w.log.Warn(line)
		return len(p), nil
	}
	remote, err, _ := strings.Cut(rest, ": ")
	attrs := []slog.Attr{slog.String("remote", remote), slog.String("error", err)}
	if hint := handshakeHint(err); hint != "" {
		attrs = append(attrs, slog.String("hint", hint))
	}
	w.log.LogAttrs(context.Background(), slog.LevelWarn, "TLS handshake failed", attrs...)
	return len(p), nil
}

// handshakeHint says what a client's failed handshake usually means.
func handshakeHint(err string) string {
	for _, s := range []string{"bad certificate", "unknown certificate authority", "certificate unknown", "bad record MAC"} {
		if strings.Contains(err, s) {
			return "the client does not trust this server's certificate: give it the CA that issued the certificate " +
				"(SSL_CERT_FILE for tofu and terraform, or the system trust store), or, for a self-signed certificate, the certificate itself"
		}
	}
	return ""
}
