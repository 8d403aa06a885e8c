package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// /readyz follows the registry (a real Distribution, stopped and started
// again), /livez does not, /healthz answers as before, and Drain turns
// readiness off while the other endpoints keep answering.
func TestReadyzFollowsTheRegistryAndDrain(t *testing.T) {
	reg := testenv.StartRegistry(t)
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, Options{Client: client, ProviderMappings: mustMapping(t, reg.Host+"/providers/${namespace}/${type}"),
		ReadyInterval: 50 * time.Millisecond})
	waitStatus := func(path string, want int, body string) {
		t.Helper()
		var r response
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if r = p.get(t, path); r.Status == want && strings.Contains(string(r.Body), body) {
				return
			}
		}
		t.Fatalf("%s: %d %q, want %d with %q", path, r.Status, r.Body, want, body)
	}
	waitStatus("/readyz", 200, "ready")
	reg.Stop()
	waitStatus("/readyz", 503, "registry "+reg.Host)
	for _, path := range []string{"/livez", "/healthz"} {
		if r := p.get(t, path); r.Status != 200 {
			t.Errorf("%s with the registry down: %d %s", path, r.Status, r.Body)
		}
	}
	reg.Start(t)
	waitStatus("/readyz", 200, "ready")
	p.Drain()
	if r := p.get(t, "/readyz"); r.Status != 503 || !strings.Contains(string(r.Body), "draining") {
		t.Errorf("/readyz after Drain: %d %s", r.Status, r.Body)
	}
	if r := p.get(t, "/v1/mirror/example.com/test/hello/index.json"); r.Status != 404 {
		t.Errorf("a request while draining: %d %s, want it answered (404: nothing pushed)", r.Status, r.Body)
	}
	if r := p.get(t, "/livez"); r.Status != 200 {
		t.Errorf("/livez while draining: %d", r.Status)
	}
}

// A registry whose name depends on a placeholder is not probed; the
// others are, once each.
func TestProbeTargets(t *testing.T) {
	maps := append(mustMapping(t, "reg.example:5000/a/${namespace}/${type}"), mustMapping(t, "reg.example:5000/b/${namespace}-${type}")...)
	maps = append(maps, mustMapping(t, "${hostname}/mirror/${namespace}/${type}")...)
	maps = append(maps, mustMapping(t, "oci-layout:/srv/${namespace}/${type}")...)
	s, err := New(Options{ProviderMappings: maps, TofuRepository: &oci.Reference{Registry: "tofu.example", Repository: "opentofu"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range s.probeTargets() {
		got = append(got, r.Registry)
	}
	if strings.Join(got, ",") != "reg.example:5000,tofu.example" {
		t.Errorf("probe targets %v, want reg.example:5000,tofu.example", got)
	}
}

// ServeUntil drains before it stops: once its context ends, /readyz
// answers 503 "draining" while requests are still served (on new
// connections), and it returns nil after ShutdownDelay.
func TestServeUntilDrainsFirst(t *testing.T) {
	client0, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{ProviderMappings: mustMapping(t, "reg.example/${namespace}/${type}"), Client: client0})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.ServeUntil(ctx, ln, Lifecycle{ShutdownDelay: 10 * time.Second, ShutdownTimeout: 10 * time.Second})
	}()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := client.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/livez"); code != 200 {
		t.Fatalf("/livez: %d", code)
	}
	stop()
	for deadline := time.Now().Add(10 * time.Second); !s.Probes().Draining(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not draining after the context ended")
		}
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "draining") {
		t.Errorf("/readyz while draining: %d %q", code, body)
	}
	if code, _ := get("/healthz"); code != 200 {
		t.Errorf("/healthz while draining: %d", code)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeUntil: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("ServeUntil did not return after its shutdown delay")
	}
	if _, err := client.Get("http://" + ln.Addr().String() + "/livez"); err == nil {
		t.Error("still serving after ServeUntil returned")
	}
}
