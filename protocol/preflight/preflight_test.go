package preflight_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/names"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/preflight"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

func client(t *testing.T) *oci.Client {
	t.Helper()
	c, err := oci.NewClient(oci.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func providerTemplate(t *testing.T, s string) *repotemplate.Template {
	t.Helper()
	tpl, err := repotemplate.ParseProviderTemplate(s)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

// Mappings into OCI layouts: a missing root is a warning, an existing one
// passes, a sampled repository that does not exist is a warning, and the
// caller's labels and advice are used as given.
func TestRegistriesOfLayouts(t *testing.T) {
	root := t.TempDir()
	tofu, err := oci.ParseReference(oci.LayoutPrefix + filepath.Join(root, "tofu"))
	if err != nil {
		t.Fatal(err)
	}
	modules, err := repotemplate.ParseModuleTemplate(oci.LayoutPrefix + root + "/m/${namespace}/${name}/${system}")
	if err != nil {
		t.Fatal(err)
	}
	moreModules, err := repotemplate.ParseModuleTemplate(oci.LayoutPrefix + root + "/more/${namespace}/${name}/${system}")
	if err != nil {
		t.Fatal(err)
	}
	cfg := preflight.Config{
		Client: client(t),
		Providers: []store.ProviderMapping{
			{Template: providerTemplate(t, oci.LayoutPrefix+root+"/nosuch/${namespace}/${type}"), Label: "first"},
			{Template: providerTemplate(t, oci.LayoutPrefix+root+"/p/${namespace}/${type}"), Include: []string{"example.com/acme/*"}, Label: "second"},
			{Template: providerTemplate(t, oci.LayoutPrefix+root+"/${namespace}/${type}"), Label: "third"},
		},
		ModuleMappings:  []*repotemplate.Template{modules, moreModules},
		ModuleLabel:     "(modules)",
		TofuRepository:  &tofu,
		TofuLabel:       "(tofu)",
		UnsampledAdvice: "ask for a sample",
	}
	if err := os.MkdirAll(filepath.Join(root, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	samples := preflight.Samples{Providers: []names.Provider{{Hostname: "example.com", Namespace: "acme", Type: "widgets"}}}
	results := preflight.Registries(context.Background(), cfg, samples)
	want := []struct{ target, status, detail string }{
		{"providers first", preflight.StatusWarning, "the OCI layout directory " + root + "/nosuch/ does not exist (yet)"},
		{"providers second", preflight.StatusWarning, "provider example.com/acme/widgets: oci-layout:" + root + "/p/acme/widgets does not exist"},
		{"providers third", preflight.StatusWarning, "provider example.com/acme/widgets: oci-layout:" + root + "/acme/widgets does not exist"},
		{"modules (modules) #1", preflight.StatusWarning, "the OCI layout directory " + root + "/m/ does not exist (yet)"},
		{"modules (modules) #2", preflight.StatusWarning, "the OCI layout directory " + root + "/more/ does not exist (yet)"},
		{"OpenTofu releases (tofu)", preflight.StatusWarning, "the OCI layout directory " + root + "/tofu does not exist (yet)"},
	}
	if len(results) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(results), len(want), results)
	}
	for i, w := range want {
		r := results[i]
		if r.Target != w.target || r.Status != w.status || !strings.HasPrefix(r.Detail, w.detail) {
			t.Errorf("result %d: %+v\nwant %s %s %q…", i, r, w.target, w.status, w.detail)
		}
	}
	if preflight.Failed(results) != 0 {
		t.Errorf("%d failed", preflight.Failed(results))
	}

	// Without samples, an existing root only answers; the advice follows.
	cfg.Providers, cfg.ModuleMappings, cfg.TofuRepository = cfg.Providers[1:2], nil, nil
	results = preflight.Registries(context.Background(), cfg, preflight.Samples{})
	if len(results) != 1 || results[0].Status != preflight.StatusOK || results[0].Detail != "the layout root exists; ask for a sample" || results[0].Repository != "" {
		t.Errorf("unsampled: %+v", results)
	}
}

// A registry that does not answer fails its check, with the caller's hint;
// it is asked once for all the mappings it serves.
func TestRegistriesUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	var hinted []error
	cfg := preflight.Config{
		Client: client(t),
		Providers: []store.ProviderMapping{
			{Template: providerTemplate(t, addr+"/a/${namespace}/${type}"), Label: "a"},
			{Template: providerTemplate(t, addr+"/b/${namespace}/${type}"), Label: "b"},
		},
		Hint: func(err error) string { hinted = append(hinted, err); return "start it" },
	}
	results := preflight.Registries(context.Background(), cfg, preflight.Samples{})
	if preflight.Failed(results) != 2 {
		t.Fatalf("results: %+v", results)
	}
	for _, r := range results {
		if r.Registry != addr || r.Credentials != "anonymous" || r.Hint != "start it" ||
			!strings.HasPrefix(r.Detail, "the registry does not answer as expected: ") {
			t.Errorf("%+v", r)
		}
	}
	if len(hinted) != 2 || !errors.Is(hinted[0], hinted[1]) {
		t.Errorf("the registry was not asked once: %v", hinted)
	}
}

func TestParseModuleAddress(t *testing.T) {
	a, err := preflight.ParseModuleAddress("Example.COM/acme/net/aws")
	if err != nil || a.String() != "example.com/acme/net/aws" {
		t.Errorf("%v, %v", a, err)
	}
	if _, err := preflight.ParseModuleAddress("acme/net/aws"); err == nil || !strings.Contains(err.Error(), "want HOST/NAMESPACE/NAME/SYSTEM") {
		t.Errorf("three parts: %v", err)
	}
}

// certificate is a self-signed certificate for localhost valid until notAfter.
func certificate(t *testing.T, notAfter time.Time) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: notAfter.Add(-365 * 24 * time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestCertificate(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		notAfter     time.Time
		status, want string
	}{
		{now.AddDate(0, 3, 0), preflight.StatusOK, "valid for localhost, 127.0.0.1 until 2030-04-01"},
		{now.AddDate(0, 0, 3), preflight.StatusWarning, "valid for localhost, 127.0.0.1 until 2030-01-04 (expires within two weeks)"},
		{now.AddDate(0, 0, -1), preflight.StatusError, "the certificate expired on 2029-12-31"},
	} {
		r := preflight.Certificate(certificate(t, tc.notAfter), "cert.pem", now)
		if r.Target != preflight.TLSTarget || r.Status != tc.status || r.Detail != tc.want {
			t.Errorf("until %s: %+v, want %s %q", tc.notAfter, r, tc.status, tc.want)
		}
	}
	if r := preflight.Certificate(tls.Certificate{Certificate: [][]byte{[]byte("junk")}}, "x.pem", now); r.Status != preflight.StatusError ||
		!strings.HasPrefix(r.Detail, "reading the TLS certificate: ") {
		t.Errorf("junk: %+v", r)
	}
}
