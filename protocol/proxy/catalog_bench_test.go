package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// BenchmarkCatalogWarmSearch is the server's work for a warm search of
// an input name over 2,000 modules of 20 versions each and 500
// providers of 10 (in process,
// from OCI layouts, every cache warm), the search bench/catalog_test.go
// times through a registry 40 ms away: the part of it that is the
// proxy's CPU.
func BenchmarkCatalogWarmSearch(b *testing.B) {
	const modules, versions, providers = 2000, 20, 500
	dir, open := moduleStore(b)
	z := networkModule(b, "")
	first := open("acme", "net0000", "aws")
	for i := 0; i < versions; i++ {
		push(b, first, moduleArtifact(b, z), seed.Version(i))
	}
	for i := 1; i < modules; i++ {
		if err := os.CopyFS(filepath.Join(dir, "acme", fmt.Sprintf("net%04d", i), "aws"), os.DirFS(filepath.Join(dir, "acme", "net0000", "aws"))); err != nil {
			b.Fatal(err)
		}
	}
	pdir, popen := layoutStore(b)
	signer, err := pgp.LoadSigner(testenv.Testdata(b, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		b.Fatal(err)
	}
	if err := seed.Provider(context.Background(), popen("p000", "big"), b.TempDir(), seed.Options{Versions: 10, Signer: signer}); err != nil {
		b.Fatal(err)
	}
	for i := 1; i < providers; i++ {
		if err := os.CopyFS(filepath.Join(pdir, fmt.Sprintf("p%03d", i), "big"), os.DirFS(filepath.Join(pdir, "p000", "big"))); err != nil {
			b.Fatal(err)
		}
	}
	s := layoutServer(b, dir, Options{ProviderMappings: mustMapping(b, "oci-layout:"+pdir+"/${namespace}/${type}")})
	for _, kind := range []string{"", catalog.KindModule} {
		b.Run("kind="+kind, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, "/catalog/?format=json&q=setting_07&kind="+kind, nil)
			req.Host = "proxy.example:8443"
			w := httptest.NewRecorder()
			s.ServeHTTP(w, req)
			if w.Code != 200 || !strings.Contains(w.Body.String(), fmt.Sprintf(`"total":%d`, modules)) || !strings.Contains(w.Body.String(), `"provider_total":0`) {
				b.Fatalf("search: %d %.300s", w.Code, w.Body)
			}
			b.ResetTimer()
			cpu := processCPU(b)
			for i := 0; i < b.N; i++ {
				d := &discardWriter{h: http.Header{}}
				s.ServeHTTP(d, req)
			}
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// networkModule is a module package of twelve map settings, an aws_vpc
// and an output, and the HCL extra beside them.
func networkModule(b *testing.B, extra string) []byte {
	var vars strings.Builder
	for i := 0; i < 12; i++ {
		fmt.Fprintf(&vars, "variable \"setting_%02d\" {\n  type = map(string)\n  description = \"Setting %d of the network.\"\n  default = {}\n}\n", i, i)
	}
	return zipOf(b, map[string]string{"main.tf": vars.String() + extra + "resource \"aws_vpc\" \"this\" {}\noutput \"vpc_id\" {\n  value = 1\n}\n"})
}

// layoutServer is a server of opts with the modules in the OCI layouts
// below dir (NAMESPACE/NAME/SYSTEM) as example.com's, logging nothing.
func layoutServer(b *testing.B, dir string, opts Options) *Server {
	client, err := oci.NewClient(oci.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tpl, err := repotemplate.ParseModuleTemplate("oci-layout:" + dir + "/${namespace}/${name}/${system}")
	if err != nil {
		b.Fatal(err)
	}
	opts.Client, opts.ModuleMappings, opts.RegistryHostname = client, []*repotemplate.Template{tpl}, "example.com"
	opts.Logger = slog.New(slog.DiscardHandler)
	s, err := New(opts)
	if err != nil {
		b.Fatal(err)
	}
	return s
}
