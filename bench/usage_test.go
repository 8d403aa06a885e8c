package bench

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// usageEvents is how many audit events BenchmarkUsage reads (issue 31:
// ten million in under 10 s).
const usageEvents = 10_000_000

// writeAuditEvents writes n download events as serve --audit-log writes
// them: 300 providers × 40 versions × 50 clients, five platforms, a
// minute apart.
func writeAuditEvents(b *testing.B, path string, n int) int64 {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	platforms := []string{"linux_amd64", "linux_arm64", "darwin_arm64", "darwin_amd64", "windows_amd64"}
	var line []byte
	for i := range n {
		line = fmt.Appendf(line[:0], `{"v":1,"time":%q,"event":"download","outcome":"delivered","client":"ci-%02d","identity":"signed-url","remote":"10.1.%d.%d","user_agent":"OpenTofu/1.10.6","kind":"provider","address":"registry.example.com/acme/p%03d","version":"5.%d.0","platform":%q,"file":"package","digest":"sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03","repository":"ghcr.io/acme/providers/acme/p%03d","source":"held","status":200,"bytes":31457280}`+"\n",
			base.Add(time.Duration(i)*time.Minute).Format(time.RFC3339Nano), i%50, i%256, i%200, i%300, i%40, platforms[i%5], i%300)
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	fi, _ := f.Stat()
	f.Close()
	return fi.Size()
}

// BenchmarkUsage measures `oci-tofu usage` over ten million audit events
// (about 4.6 GB; the page cache holds it after the first read): the
// default answer (top addresses, versions, clients) and who uses one
// version, beside `wc -l` reading the same file in the same run — the
// floor of reading it at all. Goal: under 10 s.
func BenchmarkUsage(b *testing.B) {
	bin := buildOCITofu(b)
	path := filepath.Join(b.TempDir(), "audit.log")
	size := writeAuditEvents(b, path, usageEvents)
	e := env(b)
	runMeasured(b, e, "wc", "-l", path) // into the page cache
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		wc, _ := runMeasured(b, e, "wc", "-l", path)
		top, topRSS := runMeasured(b, e, bin, "usage", "--json", "--audit-log", path)
		who, _ := runMeasured(b, e, bin, "usage", "--json", "--audit-log", path, "registry.example.com/acme/p007@5.7.0")
		fmt.Printf("usage over %d events (%.1f GB): top lists %.2f s (peak RSS %.0f MiB), who uses one version %.2f s; wc -l %.2f s; ratio to wc -l %.2f; goal < 10 s\n",
			usageEvents, float64(size)/1e9, top.Seconds(), topRSS, who.Seconds(), wc.Seconds(), top.Seconds()/wc.Seconds())
		b.ReportMetric(top.Seconds(), "usage-s")
		b.ReportMetric(wc.Seconds(), "wc-s")
	}
}
