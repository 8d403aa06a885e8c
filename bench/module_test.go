package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/moduledoc"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// Module benchmark shape (the issue's): 2,000 files, 50 MiB.
const (
	benchModuleFiles = 2000
	benchModuleBytes = 50 << 20
	// benchModuleBlobs of the files are incompressible assets holding
	// benchModuleBlobShare of the bytes; the rest is HCL-like text.
	benchModuleBlobs     = 50
	benchModuleBlobShare = 0.6
)

// writeBenchModule generates a module tree: many small text files spread
// over nested directories plus some large incompressible ones.
func writeBenchModule(b *testing.B, dir string) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields(`resource variable output module locals data provider type string number
bool list map object default description value count for_each depends_on lifecycle tags name
aws_instance aws_s3_bucket google_compute_instance azurerm_resource_group true false null`)
	blobBytes := int64(float64(benchModuleBytes) * benchModuleBlobShare)
	textFiles := benchModuleFiles - benchModuleBlobs
	textBytes := (benchModuleBytes - blobBytes) / int64(textFiles)
	write := func(name string, data []byte) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("main.tf", []byte("variable \"x\" {}\n"))
	for i := 1; i < textFiles; i++ {
		var sb strings.Builder
		for int64(sb.Len()) < textBytes {
			fmt.Fprintf(&sb, "%s \"%s_%d\" {\n  %s = %q\n}\n", words[rng.IntN(len(words))], words[rng.IntN(len(words))],
				rng.IntN(1000), words[rng.IntN(len(words))], words[rng.IntN(len(words))])
		}
		write(fmt.Sprintf("modules/m%02d/sub%d/file%04d.tf", i%40, i%7, i), []byte(sb.String()))
	}
	for i := 0; i < benchModuleBlobs; i++ {
		data := make([]byte, blobBytes/benchModuleBlobs)
		for j := 0; j+8 <= len(data); j += 8 {
			v := rng.Uint64()
			for k := 0; k < 8; k++ {
				data[j+k] = byte(v >> (8 * k))
			}
		}
		write(fmt.Sprintf("assets/blob%02d.bin", i), data)
	}
}

// BenchmarkPackModulePush packs and pushes a 2,000-file, 50 MiB module with
// `oci-tofu push module` to a local Distribution registry over TLS, beside
// the reference: `zip -r -X` of the same tree plus one raw blob upload of
// that zip with a plain client. Metrics: push/ref (goal ≤ 1.2), repush/push
// for a no-change re-push (goal < 0.10), the packer's peak RSS, and
// extract/push: extracting the module's interface from the packed zip,
// which push module stores beside the package (goal ≤ 0.05).
func BenchmarkPackModulePush(b *testing.B) {
	if _, err := exec.LookPath("zip"); err != nil {
		b.Skip("zip is not installed (make tools-apt)")
	}
	b.Setenv("XDG_CACHE_HOME", b.TempDir()) // the packer's records of earlier packs
	bin := buildOCITofu(b)
	reg := testenv.StartRegistry(b)
	e := env(b)
	tree := filepath.Join(b.TempDir(), "module")
	writeBenchModule(b, tree)
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		b.Fatal(err)
	}
	zipFile := filepath.Join(b.TempDir(), "module.zip")

	var ref, push, repush, extract time.Duration
	var rss float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		os.Remove(zipFile) // zip -r adds to an existing archive
		start := time.Now()
		cmd := exec.Command("zip", "-q", "-r", "-X", zipFile, ".")
		cmd.Dir = tree
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("zip: %v\n%s", err, out)
		}
		ref += time.Since(start)
		ref += rawUpload(b, client, fmt.Sprintf("%s/raw/m%d", reg.Host, i), []string{zipFile})
		extract += extractInterface(b, zipFile)

		target := fmt.Sprintf("%s/pushed/m%d:1.0.0", reg.Host, i)
		d, r := runMeasured(b, e, bin, "push", "module", "--quiet", tree, target)
		push += d
		rss = max(rss, r)
		d, _ = runMeasured(b, e, bin, "push", "module", "--quiet", tree, target)
		repush += d
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(push.Seconds()/n, "push-s")
	b.ReportMetric(ref.Seconds()/n, "zip+upload-s")
	b.ReportMetric(push.Seconds()/ref.Seconds(), "push/ref")
	b.ReportMetric(repush.Seconds()/n, "repush-s")
	b.ReportMetric(repush.Seconds()/push.Seconds(), "repush/push")
	b.ReportMetric(rss, "peak-RSS-MiB")
	b.ReportMetric(extract.Seconds()/n, "extract-s")
	b.ReportMetric(extract.Seconds()/push.Seconds(), "extract/push")
	b.ReportMetric(0, "ns/op")
}

// extractInterface is how long extracting the interface of the module
// zip file takes, as push module extracts it from the zip it packed
// (moduledoc.FromPackage → FromZip): the share of a push that storing
// the interface adds, besides one small referrer upload.
func extractInterface(b *testing.B, file string) time.Duration {
	b.Helper()
	f, err := os.Open(file)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	doc, err := moduledoc.FromZip(context.Background(), f, fi.Size())
	if err != nil {
		b.Fatal(err)
	}
	d := time.Since(start)
	if len(doc.Package.Root.Inputs) != 1 {
		b.Fatalf("the extracted interface has %d inputs, want the tree's 1", len(doc.Package.Root.Inputs))
	}
	return d
}
