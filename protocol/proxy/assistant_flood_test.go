package proxy

import (
	"bufio"
	"context"
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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oci-tofu/oci-tofu/convert/policy"
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

// One client flooding /mcp from many goroutines gets its burst answered
// and every call past it refused (429, Retry-After, its budget named),
// while another client's calls, made meanwhile, are all answered.
func TestAssistantFloodRateLimited(t *testing.T) {
	const tokenCI, tokenDev, burst = "token-of-ci", "token-of-dev", 10
	p := startCatalog(t, fmt.Sprintf(`
client "ci" {
  tokens  = [%q]
  modules = ["*/acme/*/*"]
  rate    = 0.001
  burst   = %d
}
client "dev" {
  tokens  = [%q]
  modules = ["*/acme/*/*"]
}
`, policy.TokenHash(tokenCI), burst, policy.TokenHash(tokenDev)), Options{AuthTokens: []string{"operator-token"}, MCP: &MCP{Loopback: true}})
	flood := map[string]string{"Authorization": "Bearer " + tokenCI}
	call := toolCall(1, "search_modules", `{"module_query":"vpc"}`)
	dev := mcpSession(t, p, map[string]string{"Authorization": "Bearer " + tokenDev})
	var mu sync.Mutex
	statuses := map[int]int{}
	var unclear []string
	var devErrs []string
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				r := postMCP(t, p, http.MethodPost, call, flood)
				mu.Lock()
				statuses[r.Status]++
				if r.Status == http.StatusTooManyRequests && (r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), "client ci is over its request budget")) {
					unclear = append(unclear, fmt.Sprintf("%v %s", r.Header, r.Body))
				}
				mu.Unlock()
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 5 {
				res, err := dev.CallTool(context.Background(), &mcp.CallToolParams{Name: "search_modules", Arguments: map[string]any{"module_query": "vpc"}})
				if err != nil || res.IsError {
					mu.Lock()
					devErrs = append(devErrs, fmt.Sprintf("%v %+v", err, res))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if statuses[http.StatusOK] != burst || statuses[http.StatusTooManyRequests] != 200-burst {
		t.Errorf("200 calls on a burst of %d: %v", burst, statuses)
	}
	if len(unclear) > 0 {
		t.Errorf("%d refusals without Retry-After or the budget named, first: %s", len(unclear), unclear[0])
	}
	if len(devErrs) > 0 {
		t.Errorf("another client's calls during the flood failed %d times, first: %s", len(devErrs), devErrs[0])
	}
	// The SDK's client shows a 429 by its status alone (the budget's
	// words are in the body it does not read for 429).
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	hc := &http.Client{Transport: headerTransport{base: p.Client.Transport, header: flood}}
	if _, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: p.URL + "/mcp", HTTPClient: hc}, nil); err == nil || !strings.Contains(err.Error(), "Too Many Requests") {
		t.Errorf("an SDK client over its budget: %v", err)
	}
}

// Calls with megabytes of arguments are refused by the body's bound
// (413, the bound named) without the server reading them whole: over
// HTTP/1.1, where no protocol buffers a body ahead of the handler,
// calls of 4 MiB allocate less than twice what calls of 1 MiB do (read
// whole, four times), and a call made after them is answered.
func TestAssistantFloodLargeArguments(t *testing.T) {
	p := startCatalog(t, "", Options{MCP: &MCP{Loopback: true}})
	tr := p.Client.Transport.(*http.Transport).Clone()
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetHTTP1(true)
	tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
	h1 := &proxy{Server: p.Server, URL: p.URL, Client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
	small := toolCall(1, "search_modules", `{"module_query":"vpc"}`)
	postMCP(t, h1, http.MethodPost, small, nil) // warm the catalogue
	allocated := func(size int) uint64 {
		big := toolCall(1, "search_modules", `{"module_query":"`+strings.Repeat("x", size)+`"}`)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range 8 {
			r := postMCP(t, h1, http.MethodPost, big, nil)
			if r.Status != http.StatusRequestEntityTooLarge || !strings.Contains(string(r.Body), "at most 65536 bytes") {
				t.Fatalf("%d bytes of arguments: %d %s", size, r.Status, r.Body)
			}
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	one, four := allocated(1<<20), allocated(4<<20)
	if four >= 2*one {
		t.Errorf("8 calls of 1 MiB allocated %d bytes, of 4 MiB %d", one, four)
	}
	for _, c := range []*proxy{h1, p} {
		if r := postMCP(t, c, http.MethodPost, small, nil); r.Status != http.StatusOK || !strings.Contains(string(r.Body), "acme/vpc/aws") {
			t.Errorf("a call after them: %d %s", r.Status, r.Body)
		}
	}
}
