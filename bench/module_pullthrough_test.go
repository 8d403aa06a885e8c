package bench

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// BenchmarkModulePullThrough installs a module of 300 files (4 MiB, half
// incompressible) whose origin registry answers with a git repository,
// with the real tofu: straight from the origin (tofu clones with the git
// program) and through the proxy with module pull-through — the first
// install, which the proxy clones, packs and stores before answering,
// then a second install in a fresh directory, from the registry. The
// registry and the git server answer 30 ms after each request, as remote
// ones would. Each iteration uses a module the registry does not hold;
// the sides alternate order; each figure is the median. Metrics
// first/direct (goal ≤ 1.3) and second/direct (goal ≤ 0.5).
func BenchmarkModulePullThrough(b *testing.B) {
	bin := buildOCITofu(b)
	reg := testenv.StartRegistry(b)
	latency := testenv.OriginOptions{Latency: 30 * time.Millisecond}
	origin := testenv.StartModuleRegistry(b, latency)
	git := testenv.StartGitServer(b, latency)
	tree := moduleTree(b, 300, 4<<20)
	for i := 0; i < b.N; i++ {
		url, _ := git.AddRepo(b, fmt.Sprintf("m%d", i), testenv.GitCommit{Tree: tree, Tags: []string{"v1.0.0"}})
		origin.Set(fmt.Sprintf("acme/m%d/aws", i), "1.0.0", testenv.ModuleAnswer{Location: "git::" + url + "?ref=v1.0.0"})
	}
	proxy := startServe(b, bin, "--module-template", reg.Host+"/pulled/${namespace}/${name}/${system}", "--pull-through-shared-repositories",
		"--pull-through-module-origin", origin.Host, "--pull-through-own-modules", "acme/*/aws", "--pull-through-module-source", git.Host,
		"--registry-hostname", "127.0.0.1") // as proxyHost names it
	cli := testenv.Tofu(b, "")
	cli.Env = append(cli.Env, "GIT_SSL_CAINFO="+testenv.NewCA(b).CertFile) // tofu's direct install runs git
	install := func(host, mod string) time.Duration {
		cfg := fmt.Sprintf("module \"m\" {\n  source  = \"%s/acme/%s/aws\"\n  version = \"1.0.0\"\n}\n", host, mod)
		d, _ := runMeasured(b, cli.Env, cli.Path, "-chdir="+testenv.WriteConfig(b, map[string]string{"main.tf": cfg}), "init", "-input=false", "-no-color")
		return d
	}
	originHost := strings.Replace(origin.Host, "localhost", "127.0.0.1", 1) // module hosts need a dot
	proxyHost := strings.Replace(proxy, "localhost", "127.0.0.1", 1)
	var directs, firsts, seconds []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		mod := fmt.Sprintf("m%d", i)
		measureDirect := func() { directs = append(directs, install(originHost, mod)) }
		measureFirst := func() { firsts = append(firsts, install(proxyHost, mod)) }
		if i%2 == 0 {
			measureDirect()
			measureFirst()
		} else {
			measureFirst()
			measureDirect()
		}
		seconds = append(seconds, install(proxyHost, mod))
	}
	b.StopTimer()
	d, f, s := medianDuration(directs), medianDuration(firsts), medianDuration(seconds)
	b.ReportMetric(d.Seconds(), "direct-s")
	b.ReportMetric(f.Seconds(), "first-s")
	b.ReportMetric(f.Seconds()/d.Seconds(), "first/direct")
	b.ReportMetric(s.Seconds(), "second-s")
	b.ReportMetric(s.Seconds()/d.Seconds(), "second/direct")
	b.ReportMetric(0, "ns/op")
}

// moduleTree writes a module of n files, size bytes in all, half of them
// random (incompressible), half text.
func moduleTree(b *testing.B, n int, size int) string {
	b.Helper()
	dir := b.TempDir()
	per := size / n
	for i := 0; i < n; i++ {
		data := make([]byte, per)
		if i%2 == 0 {
			rand.Read(data)
		} else {
			copy(data, strings.Repeat(fmt.Sprintf("# line of file %d\n", i), per/20+1))
		}
		name := filepath.Join(dir, fmt.Sprintf("files/%02d/f%d.txt", i%10, i))
		if i == 0 {
			name, data = filepath.Join(dir, "main.tf"), []byte("output \"x\" { value = 1 }\n")
		}
		os.MkdirAll(filepath.Dir(name), 0o755)
		if err := os.WriteFile(name, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}
