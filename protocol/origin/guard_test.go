package origin_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/origin"
)

// plainRecorder is a plain-HTTP server on 127.0.0.1, named localhost:PORT
// (the test origins' host name), recording the Authorization of each
// request that reaches it.
type plainRecorder struct {
	host string
	mu   sync.Mutex
	auth []string
}

func startPlain(t *testing.T) *plainRecorder {
	p := &plainRecorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.auth = append(p.auth, r.Header.Get("Authorization"))
		p.mu.Unlock()
		w.Write([]byte("zip"))
	}))
	t.Cleanup(srv.Close)
	p.host = strings.Replace(srv.Listener.Addr().String(), "127.0.0.1", "localhost", 1)
	return p
}

func (p *plainRecorder) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.auth...)
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func fetch(c *origin.Client, u *url.URL, host string) (string, error) {
	var b strings.Builder
	err := c.FetchFile(context.Background(), u, host, 1<<20, &b)
	return b.String(), err
}

// A client restricted to the origin's host refuses, before any
// connection, a URL or a redirect that is plain http, on another host
// (another port of 127.0.0.1 too), or carries credentials; the other
// hosts' logs stay empty.
func TestRestrictedClientRefusesOtherHostsAndPlainHTTP(t *testing.T) {
	reg := testenv.StartFileSite(t, testenv.OriginOptions{})
	trap := testenv.StartFileSite(t, testenv.OriginOptions{})
	plain := startPlain(t)
	c := origin.NewClient(testenv.NewCA(t).HTTPClient().Transport)
	allowed, err := origin.NewHosts(reg.Host)
	if err != nil {
		t.Fatal(err)
	}
	c.Restrict(allowed)
	good := reg.Put(t, "f.zip", []byte("zip"))
	trapped := trap.Put(t, "f.zip", []byte("trap"))
	if got, err := fetch(c, mustURL(t, good), reg.Host); err != nil || got != "zip" {
		t.Fatalf("the origin's own file: %q %v", got, err)
	}
	for name, u := range map[string]string{
		"plain http on the origin's host": "http://" + reg.Host + "/f.zip",
		"plain http elsewhere":            "http://" + plain.host + "/f.zip",
		"another host":                    trapped,
		"127.0.0.1 on another port":       strings.Replace(trapped, "localhost", "127.0.0.1", 1),
		"credentials in the URL":          strings.Replace(good, "https://", "https://user:pw@", 1),
		"a redirect to plain http":        reg.Redirect("to-plain", "http://"+plain.host+"/f.zip"),
		"a redirect to another host":      reg.Redirect("to-trap", trapped),
	} {
		if _, err := fetch(c, mustURL(t, u), reg.Host); !errors.Is(err, origin.ErrRefused) {
			t.Errorf("%s (%s): %v, want refused", name, u, err)
		}
	}
	if got := trap.Requests(); len(got) != 0 {
		t.Errorf("the other host was reached: %v", got)
	}
	if got := plain.requests(); len(got) != 0 {
		t.Errorf("the plain-http host was reached: %v", got)
	}
}

// The origin's token goes to the origin host itself over https only: a
// redirect to plain http on the same host name (which Go's redirect rule
// would send it to) is refused before it connects, and a redirect to the
// same host name on another port, or to another host, is followed
// without it; a redirect within the origin keeps it. The client is not
// restricted (as `mirror`'s): https alone is required of any host.
func TestTokenOnlyToTheOriginOverHTTPS(t *testing.T) {
	reg := testenv.StartFileSite(t, testenv.OriginOptions{})
	other := testenv.StartFileSite(t, testenv.OriginOptions{}) // localhost too, another port
	plain := startPlain(t)
	c := origin.NewClient(testenv.NewCA(t).HTTPClient().Transport)
	c.Token = func(host string) string { return map[string]string{reg.Host: "origin-secret"}[host] }
	reg.Put(t, "f.zip", []byte("zip"))
	other.Put(t, "f.zip", []byte("zip"))

	_, err := fetch(c, mustURL(t, reg.Redirect("downgrade", "http://"+plain.host+"/f.zip")), reg.Host)
	if got := plain.requests(); len(got) != 0 {
		t.Errorf("the plain-http redirect target was reached, with Authorization %q", got)
	}
	if !errors.Is(err, origin.ErrRefused) {
		t.Errorf("a redirect to plain http: %v, want refused", err)
	}

	if got, err := fetch(c, mustURL(t, reg.Redirect("away", "https://"+other.Host+"/f.zip")), reg.Host); err != nil || got != "zip" {
		t.Fatalf("a redirect to another port: %q %v", got, err)
	}
	if got := other.Requests(); len(got) != 1 || got[0].Authorization != "" {
		t.Errorf("the other port's requests: %+v, want one without Authorization", got)
	}
	reg.ResetLog()
	if got, err := fetch(c, mustURL(t, reg.Redirect("within", "https://"+reg.Host+"/f.zip")), reg.Host); err != nil || got != "zip" {
		t.Fatalf("a redirect within the origin: %q %v", got, err)
	}
	for _, r := range reg.Requests() {
		if r.Authorization != "Bearer" {
			t.Errorf("%s on the origin went without its token", r.Path)
		}
	}
}

// Service URLs fixed by configuration are https too.
func TestServiceURLsAreHTTPS(t *testing.T) {
	c := origin.NewClient(nil)
	for _, u := range []string{"http://example.com/v1/providers/", "https://user:pw@example.com/v1/providers/"} {
		if err := c.SetProvidersBase("example.com", mustURL(t, u)); err == nil {
			t.Errorf("%s was taken as providers.v1", u)
		}
	}
}
