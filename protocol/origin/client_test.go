package origin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/oci/names"
)

// registry serves canned documents by path; it records Authorization headers.
func registry(t *testing.T, docs map[string]string) (*httptest.Server, *Client, map[string]string) {
	seen := map[string]string{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen[r.URL.Path] = r.Header.Get("Authorization")
		body, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c := NewClient(srv.Client().Transport)
	return srv, c, seen
}

func addr(t *testing.T, srv *httptest.Server) names.Provider {
	u, _ := url.Parse(srv.URL)
	return names.Provider{Hostname: u.Host, Namespace: "acme", Type: "x"}
}

const sum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestDownloadValidatesAnswers(t *testing.T) {
	linux := names.Platform{OS: "linux", Arch: "amd64"}
	cases := map[string]struct{ doc, want string }{
		"ok":             {fmt.Sprintf(`{"os":"linux","arch":"amd64","filename":"f.zip","download_url":"/f.zip","shasum":%q}`, sum), ""},
		"other platform": {fmt.Sprintf(`{"os":"darwin","arch":"amd64","filename":"f.zip","shasum":%q}`, sum), "answered for darwin_amd64"},
		"path filename":  {fmt.Sprintf(`{"os":"linux","arch":"amd64","filename":"../f.zip","shasum":%q}`, sum), "malformed"},
		"short shasum":   {`{"os":"linux","arch":"amd64","filename":"f.zip","shasum":"abc"}`, "malformed"},
		"not json":       {`<html>`, "not a valid JSON answer"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv, c, _ := registry(t, map[string]string{
				"/.well-known/terraform.json":                     `{"providers.v1":"/v1/providers"}`,
				"/v1/providers/acme/x/1.0.0/download/linux/amd64": tc.doc,
			})
			d, err := c.Download(context.Background(), addr(t, srv), "1.0.0", linux)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				u, err := d.Resolve(d.DownloadURL)
				if err != nil || u.Host == "" || u.Path != "/f.zip" {
					t.Fatalf("relative download URL resolved to %v (%v)", u, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want error %q, got %v", tc.want, err)
			}
		})
	}
}

func TestNotFoundAndDiscovery(t *testing.T) {
	srv, c, _ := registry(t, map[string]string{"/.well-known/terraform.json": `{"modules.v1":"/m/"}`})
	if _, err := c.Versions(context.Background(), addr(t, srv)); err == nil || !strings.Contains(err.Error(), "does not offer providers.v1") {
		t.Fatalf("no providers.v1: %v", err)
	}
	srv2, c2, _ := registry(t, map[string]string{"/.well-known/terraform.json": `{"providers.v1":"/v1/providers/"}`})
	if _, err := c2.Versions(context.Background(), addr(t, srv2)); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("unknown provider: %v", err)
	}
}

// Tokens go to the registry host only, never to download hosts.
func TestTokenOnlyForRegistryHost(t *testing.T) {
	files, _, seenFiles := registry(t, map[string]string{"/f.zip": "zip"})
	srv, c, seen := registry(t, map[string]string{
		"/.well-known/terraform.json":   `{"providers.v1":"/v1/providers/"}`,
		"/v1/providers/acme/x/versions": `{"versions":[{"version":"1.0.0","protocols":["5.0"],"platforms":[{"os":"linux","arch":"amd64"}]}]}`,
	})
	c.Token = func(host string) string { return "tok-" + host }
	// One transport trusting both test servers' certificates.
	c.HTTP = files.Client()
	c.HTTP.Transport.(*http.Transport).TLSClientConfig.RootCAs.AddCert(srv.Certificate())
	a := addr(t, srv)
	vs, err := c.Versions(context.Background(), a)
	if err != nil || len(vs) != 1 || vs[0].Platforms[0].OS != "linux" {
		t.Fatalf("%+v %v", vs, err)
	}
	if seen["/v1/providers/acme/x/versions"] != "Bearer tok-"+a.Hostname {
		t.Errorf("registry request lacked the token: %q", seen["/v1/providers/acme/x/versions"])
	}
	u, _ := url.Parse(files.URL + "/f.zip")
	var b strings.Builder
	if err := c.FetchFile(context.Background(), u, a.Hostname, 10, &b); err != nil || b.String() != "zip" {
		t.Fatal(err)
	}
	if seenFiles["/f.zip"] != "" {
		t.Errorf("the token went to the download host: %q", seenFiles["/f.zip"])
	}
	if err := c.FetchFile(context.Background(), u, a.Hostname, 2, &b); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("size bound: %v", err)
	}
}

func TestDefaultToken(t *testing.T) {
	t.Setenv("TF_TOKEN_app_terraform_io", "a")
	t.Setenv("TF_TOKEN_my__reg_example_com", "b")
	if DefaultToken("app.terraform.io") != "a" || DefaultToken("my-reg.example.com") != "b" || DefaultToken("other.io") != "" {
		t.Fatal("TF_TOKEN_* mapping")
	}
}

// A download answer's locations must be https: a plain-http one is
// refused when it is resolved, before anything asks for it.
func TestResolveRefusesPlainHTTP(t *testing.T) {
	srv, c, _ := registry(t, map[string]string{
		"/.well-known/terraform.json":                     `{"providers.v1":"/v1/providers"}`,
		"/v1/providers/acme/x/1.0.0/download/linux/amd64": fmt.Sprintf(`{"os":"linux","arch":"amd64","filename":"f.zip","download_url":"http://files.example/f.zip","shasums_url":"/sums","shasum":%q}`, sum),
	})
	d, err := c.Download(context.Background(), addr(t, srv), "1.0.0", names.Platform{OS: "linux", Arch: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Resolve(d.DownloadURL); !errors.Is(err, ErrRefused) {
		t.Errorf("http download URL: %v, want refused", err)
	}
	if u, err := d.Resolve(d.SHASumsURL); err != nil || u.Scheme != "https" {
		t.Errorf("relative SHA256SUMS URL: %v %v", u, err)
	}
}
