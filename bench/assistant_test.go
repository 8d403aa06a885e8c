package bench

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oci-tofu/oci-tofu/internal/seed"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/protocol/assistant"
	"github.com/oci-tofu/oci-tofu/protocol/proxy/catalog"
)

// Calls of each kind in a round of BenchmarkAssistant, and its rounds:
// enough of them that the proxy's CPU time, read in 10 ms ticks, is
// read to a few per cent.
const (
	assistantDetailCalls = 400
	assistantSearchCalls = 20
	assistantRounds      = 3
	assistantSearchWords = "setting_07" // an input name of every module
)

// BenchmarkAssistant measures the MCP tools of `serve --mcp` (issue 43)
// over the catalogue of BenchmarkCatalog (seedCatalog: 2,000 modules ×
// 20 versions, 500 providers), each beside the same answer read as the
// catalogue's JSON from the same proxy in the same run (the issue's
// goals in brackets):
//
//   - a warm get_module_details of one module's newest version, beside
//     its catalogue page (/catalog/modules/HOST/NS/NAME/SYSTEM) [< 1 ms
//     of the proxy's CPU];
//   - a warm search_modules matching every module by an input name,
//     beside the catalogue search it reads (/catalog/?q=…&kind=module)
//     [< 50 ms].
//
// Each figure is the proxy process's CPU time (user and system, from
// /proc) per call, and the wall time per call as the client saw it. The
// proxy is the real binary, its MCP endpoint reached as assistants reach
// it: a go-sdk client session over Streamable HTTP to /mcp, over the
// same TLS keep-alive connection pool as the catalogue reads, so both
// sides pay the same transport and only the proxy's process is measured
// (the client's CPU is this process's). Rounds alternate the sides.
func BenchmarkAssistant(b *testing.B) {
	reg := testenv.StartRegistry(b)
	bin := buildOCITofu(b)
	seedCatalog(b, reg, bin)
	proxyURL, cmd := serveProcess(b, bin, reg.CA, "--mcp",
		"--module-template", reg.Host+"/bench/modules/${namespace}/${name}/${system}",
		"--provider-template", reg.Host+"/bench/providers/${namespace}/${type}")
	client := proxyClient(reg.CA)
	cs := assistantSession(b, client, proxyURL)
	cpu := func() time.Duration { return procCPU(b, cmd.Process.Pid) }

	search := assistant.SearchModulesIn{ModuleQuery: assistantSearchWords}
	searchURL := proxyURL + catalog.Prefix + "?" + url.Values{"format": {"json"}, "kind": {catalog.KindModule}, "q": {assistantSearchWords}}.Encode()
	coldStart := time.Now()
	found := callAssistant[assistant.SearchModulesOut](b, cs, "search_modules", search)
	cold := time.Since(coldStart)
	var page catalog.IndexPage
	getJSON(b, client, searchURL, &page)
	if found.Total != catalogModules || page.Total != catalogModules || len(found.Modules) != len(page.Modules) {
		b.Fatalf("search_modules finds %d modules (%d on its page), the catalogue %d (%d); want %d",
			found.Total, len(found.Modules), page.Total, len(page.Modules), catalogModules)
	}
	id := found.Modules[0].ModuleID
	details := assistant.ModuleIn{ModuleID: id}
	pageURL := proxyURL + catalog.Prefix + "modules/" + id + "?format=json"
	d := callAssistant[assistant.ModuleDetails](b, cs, "get_module_details", details)
	var mp catalog.ModulePage
	getJSON(b, client, pageURL, &mp)
	newest := seed.Version(catalogModuleVersions - 1)
	if d.Version != newest || mp.Version != newest || mp.Module == nil || len(d.Inputs) != len(mp.Module.Inputs) || len(d.Inputs) != 13 {
		b.Fatalf("get_module_details of %s: version %s, %d inputs; its page: version %s; want %s and 13 inputs", id, d.Version, len(d.Inputs), mp.Version, newest)
	}

	sides := []*assistantSide{
		{name: "details-mcp", n: assistantDetailCalls, call: func() { callAssistant[assistant.ModuleDetails](b, cs, "get_module_details", details) }},
		{name: "details-catalogue", n: assistantDetailCalls, call: func() { getJSON(b, client, pageURL, &catalog.ModulePage{}) }},
		{name: "search-mcp", n: assistantSearchCalls, call: func() { callAssistant[assistant.SearchModulesOut](b, cs, "search_modules", search) }},
		{name: "search-catalogue", n: assistantSearchCalls, call: func() { getJSON(b, client, searchURL, &catalog.IndexPage{}) }},
	}
	b.ResetTimer()
	for r := 0; r < assistantRounds; r++ {
		for i := range sides {
			if r%2 == 1 { // the reverse order every other round
				i = len(sides) - 1 - i
			}
			sides[i].measure(cpu)
		}
	}
	b.StopTimer()

	b.Logf("cold search_modules (every module's interface read): %v", cold.Round(time.Millisecond))
	b.ReportMetric(cold.Seconds()*1000, "cold-search-mcp-ms")
	for _, s := range sides {
		b.Logf("%s: CPU ms per call %.3f, wall ms per call %.3f (%d calls a round)", s.name, s.cpuMs, s.wallMs, s.n)
		b.ReportMetric(median(s.cpuMs), s.name+"-cpu-ms/op")
		b.ReportMetric(median(s.wallMs), s.name+"-ms/op")
	}
	for i := 0; i < len(sides); i += 2 {
		mcpSide, cat := sides[i], sides[i+1]
		kind := strings.TrimSuffix(mcpSide.name, "-mcp")
		b.ReportMetric(median(mcpSide.cpuMs)/median(cat.cpuMs), kind+"-cpu-mcp/catalogue")
		b.ReportMetric(median(mcpSide.wallMs)/median(cat.wallMs), kind+"-mcp/catalogue")
	}
	b.ReportMetric(0, "ns/op")
}

// assistantSide is one kind of call BenchmarkAssistant times: n calls a
// round, the proxy's CPU and the wall time per call of each round.
type assistantSide struct {
	name          string
	n             int
	call          func()
	cpuMs, wallMs []float64
}

func (s *assistantSide) measure(cpu func() time.Duration) {
	before, start := cpu(), time.Now()
	for i := 0; i < s.n; i++ {
		s.call()
	}
	wall, used := time.Since(start), cpu()-before
	s.cpuMs = append(s.cpuMs, used.Seconds()*1000/float64(s.n))
	s.wallMs = append(s.wallMs, wall.Seconds()*1000/float64(s.n))
}

// assistantSession is an MCP client session with the proxy at base over
// Streamable HTTP, through c.
func assistantSession(b *testing.B, c *http.Client, base string) *mcp.ClientSession {
	b.Helper()
	cl := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: base + assistant.Path, HTTPClient: c}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// callAssistant calls the tool name with args and decodes its structured
// answer; a tool error fails the benchmark.
func callAssistant[T any](b *testing.B, cs *mcp.ClientSession, name string, args any) T {
	b.Helper()
	var out T
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		b.Fatalf("%s: a tool error: %v", name, res.Content)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return out
}
