package oci

import (
	"io"
	"net/http"
	"net/http/httptest"
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
