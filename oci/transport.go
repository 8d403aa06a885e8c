package oci

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// NewTransport builds the HTTP transport oci-tofu uses for every outbound
// connection: system roots plus SSL_CERT_FILE and opts.CAFile, TLS 1.2+,
// bounded dial, handshake and response-header timeouts.
//
// It speaks HTTP/1.1 only, through large buffers: blob transfers are
// what registry traffic is, and over HTTP/2 they share one connection's
// flow-control window and cost the registry about twice the CPU (measured
// against Distribution: 0.85 s against 0.38 s per 256 MiB); parallel
// transfers get a connection each instead.
func NewTransport(opts Options) (*http.Transport, error) {
	return newTransport(opts, true, newSessionCache())
}

// newSessionCache keeps TLS sessions for resumption: a connection opened
// after one to the same server has finished its handshake resumes that
// session (TLS 1.3 PSK) instead of verifying the server's certificate
// chain and signature again (it was verified when the session began, and
// Go checks it has not expired since). A cold listing opens up to
// --registry-concurrency connections right after the tag list's first
// page arrives on the first one.
func newSessionCache() tls.ClientSessionCache {
	return tls.NewLRUClientSessionCache(sessionCacheSize)
}

// sessionCacheSize is how many servers' sessions a transport keeps.
const sessionCacheSize = 64

// newTransport is NewTransport; bulk is false for the transport of small
// metadata answers (registryTransport), which keeps Go's small default
// buffers and more idle connections.
func newTransport(opts Options, bulk bool, sessions tls.ClientSessionCache) (*http.Transport, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if opts.CAFile != "" {
		pem, err := readCAFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("reading CA file: %w", err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", opts.CAFile)
		}
	}
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}, ClientSessionCache: sessions},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   metaConnsPerHost(opts.Etiquette),
		MaxConnsPerHost:       metaConnsPerHost(opts.Etiquette),
		Protocols:             &protocols,
	}
	if bulk {
		t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &readBufferedConn{Conn: c, r: bufio.NewReaderSize(c, readBuffer)}, nil
		}
		t.MaxIdleConnsPerHost, t.MaxConnsPerHost = bulkIdleConnsPerHost, 0
		t.ReadBufferSize, t.WriteBufferSize = 64<<10, 64<<10
	}
	return t, nil
}

// bulkIdleConnsPerHost is how many idle blob connections (a quarter of a
// MiB of buffers each) are kept per host.
const bulkIdleConnsPerHost = 64

// registryTransport sends a registry's small metadata requests (manifests,
// tags, referrers: a listing makes thousands at once) through meta, whose
// connections take Go's default buffers of a few KiB, and everything else
// (blobs, and wherever their downloads are redirected) through bulk, whose
// large buffers (a quarter of a MiB a connection) are for throughput.
// With --registry-concurrency 256, a listing holds 256 connections or more:
// 64 MiB of buffers if they were all bulk.
type registryTransport struct {
	meta, bulk http.RoundTripper
}

func newRegistryTransport(opts Options) (*registryTransport, error) {
	sessions := newSessionCache() // one server's sessions serve both
	meta, err := newTransport(opts, false, sessions)
	if err != nil {
		return nil, err
	}
	bulk, err := newTransport(opts, true, sessions)
	if err != nil {
		return nil, err
	}
	return &registryTransport{meta: meta, bulk: bulk}, nil
}

func (t *registryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if metadataPath(req.URL.Path) {
		return t.meta.RoundTrip(req)
	}
	return t.bulk.RoundTrip(req)
}

// metadataPath reports whether a registry API path reads or writes small
// documents: manifests, tag lists, referrers, the API check, the catalog.
func metadataPath(p string) bool {
	switch {
	case p == "/v2/" || p == "/v2/_catalog":
		return true
	case !strings.HasPrefix(p, "/v2/") || strings.Contains(p, "/blobs/"):
		return false
	}
	return strings.Contains(p, "/manifests/") || strings.HasSuffix(p, "/tags/list") || strings.Contains(p, "/referrers/")
}

// metaConnsPerHost is how many metadata connections to one registry host
// may be open at once, idle ones included, and kept idle: as many as the
// etiquette lets requests be in flight. A request takes its slot back
// when its answer's headers arrive, so without this bound the next one
// would dial a connection of its own while that answer's body is still
// being read: a listing of thousands of versions on a busy machine opened
// 414 connections for 256 slots, each a TCP and TLS handshake (two round
// trips, and CPU at both ends), most of them closed again at once.
func metaConnsPerHost(e *Etiquette) int {
	return e.withDefaults().MaxConcurrent
}

// readBuffer is the read buffer below TLS on registry connections.
const readBuffer = 128 << 10

// readBufferedConn reads through a large buffer: TLS reads one record (16
// KiB) at a time, a read system call each; through the buffer, one system
// call takes whatever the socket holds, up to readBuffer.
type readBufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *readBufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// readCAFile reads a CA bundle: a regular file of at most MaxSmallFile
// bytes (a FIFO or a device is refused, not waited on).
func readCAFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSmallFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSmallFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, MaxSmallFile)
	}
	return b, nil
}
