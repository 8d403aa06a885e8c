package proxy

import (
	"bytes"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// Over HTTP/2 a client that sends tool calls and never reads its socket
// at all (the per-stream write deadline cannot help: the connection's
// writer is what blocks) loses its connection once nothing could be
// written to it for the stall timeout, plus the 5 s crypto/tls gives its
// closing alert: the server's goroutines for it end. Without the
// connection's write timeout the HTTP/2 server let it go only some 20 s
// later, past this test's 15 s.
func TestAssistantFloodHTTP2ClientNeverReads(t *testing.T) {
	p := startCatalog(t, "", Options{MCP: &MCP{Loopback: true}, StallTimeout: 200 * time.Millisecond})
	states := &connStates{closed: map[string]chan struct{}{}}
	ts := httptest.NewUnstartedServer(p.Server)
	ts.Config = p.Server.httpServer(nil)
	ts.Config.ConnState = states.hook
	ts.Listener = smallBuffers{ts.Listener}
	ts.EnableHTTP2 = true
	ts.StartTLS()
	t.Cleanup(ts.Close)
	baseline := runtime.NumGoroutine()

	pool := ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	raw, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	raw.(*net.TCPConn).SetReadBuffer(4 << 10)
	conn := tls.Client(raw, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"h2"}})
	defer conn.Close()
	if err := conn.Handshake(); err != nil || conn.ConnectionState().NegotiatedProtocol != "h2" {
		t.Fatalf("handshake: %v, protocol %q", err, conn.ConnectionState().NegotiatedProtocol)
	}
	flooded := make(chan struct{})
	go func() {
		defer close(flooded)
		floodHTTP2(conn, ts.Listener.Addr().String(), toolCall(1, "get_module_details", `{"module_id":"example.com/acme/vpc/aws"}`))
	}()
	select {
	case <-states.closedChan(conn.LocalAddr().String()):
	case <-time.After(15 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("the server still holds the HTTP/2 connection of a client that reads nothing:\n%s", buf[:runtime.Stack(buf, true)])
	}
	// The server has let the connection go; the flooding client's own
	// goroutine may still sit in a write the kernel has not yet refused.
	// Ending it is the client's business, not the server's: count only
	// what the server leaves behind.
	conn.Close()
	<-flooded
	for deadline := time.Now().Add(30 * time.Second); runtime.NumGoroutine() > baseline; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before the client that reads nothing:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
	}
}

// floodHTTP2 speaks HTTP/2 on conn without ever reading it: the preface,
// settings that open every window wide, then POSTs of body to /mcp until
// a write fails.
func floodHTTP2(conn net.Conn, authority, body string) {
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		return
	}
	fr := http2.NewFramer(conn, nil)
	if fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 30}) != nil ||
		fr.WriteWindowUpdate(0, 1<<30) != nil {
		return
	}
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for id := uint32(1); id < 1<<20; id += 2 {
		block.Reset()
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":path", "/mcp"}, {":authority", authority},
			{"content-type", "application/json"}, {"accept", "application/json, text/event-stream"}, {"content-length", strconv.Itoa(len(body))}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block.Bytes(), EndHeaders: true}) != nil ||
			fr.WriteData(id, true, []byte(body)) != nil {
			return
		}
	}
}
