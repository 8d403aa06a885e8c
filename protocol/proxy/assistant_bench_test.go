package proxy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/seed"
)

// BenchmarkAssistantWarmDetails is the server's work for a warm
// get_module_details over /mcp (in process, from an OCI layout, every
// cache warm) beside the warm read of the catalogue page it answers
// from: the part of bench/assistant_test.go's figure that is the
// proxy's own, without TLS or a client; and beside an MCP ping through
// the same handler, the SDK's own work for a message (its floor).
func BenchmarkAssistantWarmDetails(b *testing.B) {
	dir, open := moduleStore(b)
	z := networkModule(b, "variable \"name\" {\n  type = string\n}\n")
	repo := open("acme", "net", "aws")
	for i := 0; i < 20; i++ {
		push(b, repo, moduleArtifact(b, z), seed.Version(i))
	}
	s := layoutServer(b, dir, Options{MCP: &MCP{Loopback: true}})
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_module_details","arguments":{"module_id":"example.com/acme/net/aws"}}}`
	post := func(body string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
		r.Host, r.RemoteAddr = "proxy.example:8443", "127.0.0.1:40000"
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	details := func() *httptest.ResponseRecorder { return post(call) }
	ping := func() *httptest.ResponseRecorder { return post(`{"jsonrpc":"2.0","id":1,"method":"ping"}`) }
	page := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/catalog/modules/example.com/acme/net/aws?format=json", nil)
		r.Host, r.RemoteAddr = "proxy.example:8443", "127.0.0.1:40000"
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	if w := details(); w.Code != 200 || !strings.Contains(w.Body.String(), `\"latest\":\"`) || strings.Contains(w.Body.String(), `"isError":true`) {
		b.Fatalf("get_module_details: %d %.500s", w.Code, w.Body)
	}
	if w := ping(); w.Code != 200 || !strings.Contains(w.Body.String(), `"result":{}`) {
		b.Fatalf("ping: %d %.300s", w.Code, w.Body)
	}
	if w := page(); w.Code != 200 {
		b.Fatalf("page: %d %.300s", w.Code, w.Body)
	}
	for _, c := range []struct {
		name string
		do   func() *httptest.ResponseRecorder
	}{{"details", details}, {"page", page}, {"ping", ping}} {
		b.Run(c.name, func(b *testing.B) {
			cpu := processCPU(b)
			for b.Loop() {
				c.do()
			}
			b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N)/1000, "cpu-ms/op")
		})
	}
}
