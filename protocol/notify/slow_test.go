package notify

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strings"
	"testing"
	"time"
)

// slowRequest starts a notification whose chunked body never ends and
// returns the status line answered, or "" when none came within wait.
func slowRequest(t *testing.T, addr, auth string, wait time.Duration) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n", Path, auth)
	c.SetReadDeadline(time.Now().Add(wait))
	line, _ := bufio.NewReader(c).ReadString('\n')
	return line
}

// A sender that trickles its body (slow-loris) holds a connection for at
// most ReadTimeout, and one refused for its secret not at all: the
// server would otherwise wait for the unread body before answering, with
// no deadline (serve sets none but the headers').
func TestSlowBodiesAreCutOff(t *testing.T) {
	r, err := New(Options{Secret: []byte(testSecret), Scope: scopeAcme, Apply: func([]string, bool) {}, ReadTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(r)
	srv.Config.ReadHeaderTimeout = 10 * time.Second
	srv.Start()
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	if got := slowRequest(t, addr, "Bearer wrong-wrong-wrong-wrong", 2*time.Second); got != "HTTP/1.1 401 Unauthorized\r\n" {
		t.Errorf("a refused slow notification: %q, want its 401 at once", got)
	}
	// A body read on past ReadTimeout would leave nothing to read within
	// slowRequest's wait: the 408 is the read cut off.
	if got := slowRequest(t, addr, "Bearer "+testSecret, 2*time.Second); got != "HTTP/1.1 408 Request Timeout\r\n" {
		t.Errorf("an authenticated slow notification: %q, want a 408 after the read timeout", got)
	}
}

// A refused notification over HTTP/2 leaves the connection open: its
// other streams (a load balancer's, for other clients) are not its, and
// "Connection: close" there makes the server send GOAWAY.
func TestRefusalKeepsHTTP2ConnectionOpen(t *testing.T) {
	r, err := New(Options{Secret: []byte(testSecret), Scope: scopeAcme, Apply: func([]string, bool) {}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(r)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	client := srv.Client()
	post := func() (reused bool) {
		var got bool
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { got = i.Reused }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodPost, srv.URL+Path, strings.NewReader(`{"events":[]}`))
		req.Header.Set("Authorization", "Bearer wrong-wrong-wrong-wrong")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.ProtoMajor != 2 {
			t.Fatalf("%s %d", resp.Proto, resp.StatusCode)
		}
		return got
	}
	post()
	time.Sleep(50 * time.Millisecond) // a GOAWAY would have arrived
	if !post() {
		t.Error("the second refused notification needed a new HTTP/2 connection: the first closed it")
	}
}

// Names past MaxRepository, a repository's or a host's, are never
// matched against the templates (the cost of matching grows with the
// square of a name's length): Scope is not asked of them.
func TestLongNamesAreNotMatched(t *testing.T) {
	asked := 0
	r, err := New(Options{Secret: []byte(testSecret), Apply: func([]string, bool) {},
		Scope: func(host, repo string) []string { asked++; return scopeAcme(host, repo) }})
	if err != nil {
		t.Fatal(err)
	}
	long := "acme/" + strings.Repeat("a-", MaxRepository)
	if n := r.accept([]Change{{Host: "reg.example", Repository: long}, {Host: strings.Repeat("h", MaxRepository+1), Repository: "acme/r"}}); n != 0 || asked != 0 {
		t.Errorf("long names: %d repositories, Scope asked %d times; want neither", n, asked)
	}
	if r.accept([]Change{{Host: "reg.example", Repository: "acme/r"}}); asked != 1 {
		t.Errorf("a short name: Scope asked %d times, want once", asked)
	}
}
