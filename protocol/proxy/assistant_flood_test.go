package proxy

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// smallBuffers is a listener whose connections have socket buffers of
// a few kilobytes, so that a client that reads nothing blocks the
// server's writes after a few responses rather than megabytes of them.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4 << 10)
		tc.SetReadBuffer(4 << 10)
	}
	return c, err
}

// connStates is what the server's ConnState hook saw: which remote
// addresses' connections it closed.
type connStates struct {
	mu     sync.Mutex
	closed map[string]chan struct{}
}

func (c *connStates) closedChan(addr string) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.closed[addr]
	if !ok {
		ch = make(chan struct{})
		c.closed[addr] = ch
	}
	return ch
}

func (c *connStates) hook(conn net.Conn, st http.ConnState) {
	if st == http.StateClosed || st == http.StateHijacked {
		close(c.closedChan(conn.RemoteAddr().String()))
	}
}

// serveSmallBuffers serves p's handler again over TLS, on connections
// with small socket buffers, HTTP/1.1 only, telling closes to states.
func serveSmallBuffers(t *testing.T, p *proxy) (*httptest.Server, *connStates) {
	t.Helper()
	states := &connStates{closed: map[string]chan struct{}{}}
	ts := httptest.NewUnstartedServer(p.Server)
	ts.Listener = smallBuffers{ts.Listener}
	ts.Config.ConnState = states.hook
	ts.StartTLS()
	t.Cleanup(ts.Close)
	return ts, states
}

// mcpRequest is an HTTP/1.1 POST of body to /mcp at host.
func mcpRequest(host, body string) string {
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s",
		host, len(body), body)
}

// A client that sends tool calls and never reads their answers loses
// its connection once a response has waited for it longer than the
// stall timeout: the server's goroutine for it ends, and meanwhile
// another client's calls are answered.
func TestAssistantFloodClientNeverReads(t *testing.T) {
	p := startCatalog(t, "", Options{MCP: &MCP{Loopback: true}, StallTimeout: 200 * time.Millisecond})
	ts, states := serveSmallBuffers(t, p)
	normal := ts.Client()
	normal.Timeout = 30 * time.Second
	call := toolCall(1, "get_module_details", `{"module_id":"example.com/acme/vpc/aws"}`)
	answer := func() error {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(call))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := normal.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b := new(strings.Builder)
		if _, err := bufio.NewReader(resp.Body).WriteTo(b); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(b.String(), "acme/vpc/aws") {
			return fmt.Errorf("%d %s", resp.StatusCode, b)
		}
		return nil
	}
	if err := answer(); err != nil { // warm the catalogue
		t.Fatal(err)
	}
	normal.CloseIdleConnections()
	baseline := runtime.NumGoroutine()

	tc := ts.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	tc.NextProtos, tc.ServerName = []string{"http/1.1"}, "127.0.0.1"
	raw, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	raw.(*net.TCPConn).SetReadBuffer(4 << 10)
	conn := tls.Client(raw, tc)
	defer conn.Close()
	if err := conn.Handshake(); err != nil {
		t.Fatal(err)
	}
	req := mcpRequest(ts.Listener.Addr().String(), call)
	sent := make(chan int, 1)
	written := make(chan struct{})
	go func() { // sends calls until the server stops taking them
		n := 0
		for ; ; n++ {
			if n == 20 {
				close(written)
			}
			if _, err := conn.Write([]byte(req)); err != nil {
				break
			}
		}
		if n < 20 {
			close(written)
		}
		sent <- n
	}()
	<-written
	for i := range 5 {
		if err := answer(); err != nil {
			t.Errorf("another client's call %d while one reads nothing: %v", i, err)
		}
	}
	select {
	case <-states.closedChan(conn.LocalAddr().String()):
	case <-time.After(30 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("the server still holds the connection of a client that reads nothing:\n%s", buf[:runtime.Stack(buf, true)])
	}
	if n := <-sent; n < 20 {
		t.Errorf("the server took %d calls", n)
	}
	normal.CloseIdleConnections()
	for deadline := time.Now().Add(30 * time.Second); runtime.NumGoroutine() > baseline; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines, %d before the client that reads nothing:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
	}
	if err := answer(); err != nil {
		t.Errorf("after: %v", err)
	}
}
