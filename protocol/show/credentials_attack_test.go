package show_test

import (
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/protocol/show"
)

// challenger is a TLS server asking for Basic credentials on every
// request, recording the Authorization headers it is sent.
func challenger(t *testing.T) (*httptest.Server, func() []string, string) {
	t.Helper()
	var mu sync.Mutex
	var got []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if a := r.Header.Get("Authorization"); a != "" {
			got = append(got, a)
		}
		mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return srv, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), got...) }, ca
}

// The docker config's credentials for one registry are never sent to
// the registry a template maps an address to when it is another (a
// ${hostname} template and an address naming a host, or a fixed host);
// they are when it is that one (the control).
func TestShowSendsCredentialsToTheirHostOnly(t *testing.T) {
	srv, sent, ca := challenger(t)
	host := strings.TrimPrefix(srv.URL, "https://")
	for _, c := range []struct {
		credsFor string
		want     bool
	}{{"registry.example:443", false}, {"example.com", false}, {host, true}} {
		docker := t.TempDir()
		auth := base64.StdEncoding.EncodeToString([]byte("user:secret-" + c.credsFor))
		if err := os.WriteFile(filepath.Join(docker, "config.json"), []byte(`{"auths":{"`+c.credsFor+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("DOCKER_CONFIG", docker)
		client, err := oci.NewClient(oci.Options{CAFile: ca})
		if err != nil {
			t.Fatal(err)
		}
		before := len(sent())
		for _, tc := range []struct{ tpl, arg string }{
			{host + "/p/${namespace}/${type}", "example.com/test/hello"},
			{"${hostname}/p/${namespace}/${type}", host + "/test/hello"},
		} {
			_, err := shown(t, tc.arg, show.Options{Client: client, ProviderTemplate: tc.tpl}, false)
			t.Logf("%s via %s: %v", tc.arg, tc.tpl, err)
			if err == nil {
				t.Errorf("%s via %s: shown from a server that refuses everyone", tc.arg, tc.tpl)
			}
		}
		got := sent()[before:]
		if leaked := len(got) > 0; leaked != c.want {
			t.Errorf("credentials for %s: %d Authorization headers sent to %s (%q), want any: %v", c.credsFor, len(got), host, got, c.want)
		}
	}
}
