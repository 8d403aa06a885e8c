package oci

import (
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The registry transport speaks HTTP/1.1, through its read buffer, even to
// a server that offers HTTP/2.
func TestTransportHTTP1(t *testing.T) {
	body := strings.Repeat("x", 1<<20)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()
	tr, err := NewTransport(Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr.TLSClientConfig.RootCAs.AddCert(ts.Certificate())
	c := &http.Client{Transport: tr}
	for i := 0; i < 2; i++ {
		resp, err := c.Get(ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != body {
			t.Fatalf("body: %d bytes, %v", len(b), err)
		}
		if resp.ProtoMajor != 1 {
			t.Fatalf("upstream protocol %s, want HTTP/1.1", resp.Proto)
		}
	}
}

// Connections opened after the first to a registry has finished its
// handshake resume its TLS session (no second verification of the
// certificate chain), on the metadata and blob transports alike, and a
// resumed connection still reaches only the server that was verified.
func TestTransportResumesTLSSessions(t *testing.T) {
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	ts.StartTLS()
	defer ts.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	rt, err := newRegistryTransport(Options{CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	resumed := func(path string) bool {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		req.Close = true // a connection of its own
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.TLS.DidResume
	}
	if resumed("/v2/p/manifests/1.0.0") {
		t.Fatal("the first connection resumed a session")
	}
	if !resumed("/v2/p/manifests/1.1.0") || !resumed("/v2/p/blobs/sha256:"+strings.Repeat("0", 64)) {
		t.Error("later connections to the same registry did not resume its session")
	}
}
