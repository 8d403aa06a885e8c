package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

var benchPlatforms = []string{
	"linux_amd64", "linux_arm64", "linux_386", "linux_arm", "darwin_amd64",
	"darwin_arm64", "windows_amd64", "windows_386", "freebsd_amd64",
}

// BenchmarkProviderPush pushes a 9-platform release of 32 MiB incompressible
// zips to a local Distribution registry over TLS, beside the reference: the
// same bytes uploaded blob by blob with a plain client. Metrics: push/raw
// (goal ≤ 1.0), repush/push for a no-change re-push (goal ≤ 0.10), the
// packer's peak RSS (goal < 100 MiB), and attested/push: the same push with
// --attest-key (signed in-toto attestation of the index), to a fresh
// repository beside the plain one, the two in alternating order (goal
// ≤ 1.10). The plain push stores every platform's SBOM (the default);
// sbom/nosbom compares it with the same push with --no-sbom, to a fresh
// repository, the two in alternating order (goal ≤ 1.10: the SBOMs are
// made while the zips upload).
func BenchmarkProviderPush(b *testing.B) {
	const zipSize = 32 << 20
	bin := buildOCITofu(b)
	reg := testenv.StartRegistry(b)
	e := env(b)

	dir := b.TempDir()
	sums := sha256sums.Sums{}
	var files []string
	for _, p := range benchPlatforms {
		name := fmt.Sprintf("terraform-provider-big_1.0.0_%s.zip", p)
		path := filepath.Join(dir, name)
		writeRandomZip(b, path, "terraform-provider-big_v1.0.0", zipSize)
		f, _ := os.Open(path)
		sum, _, _ := pkghash.SHA256(f)
		f.Close()
		sums[name] = sum
		files = append(files, path)
	}
	os.WriteFile(filepath.Join(dir, "terraform-provider-big_1.0.0_SHA256SUMS"), sums.Bytes(), 0o644)
	signer, err := pgp.LoadSigner(testenv.Testdata(b, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		b.Fatal(err)
	}
	sig, _ := signer.Sign(sums.Bytes(), time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	os.WriteFile(filepath.Join(dir, "terraform-provider-big_1.0.0_SHA256SUMS.sig"), sig, 0o644)
	key := testenv.Testdata(b, "keys", "gocrypto-signer.asc")

	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile})
	if err != nil {
		b.Fatal(err)
	}
	attestKey := writeAttestKey(b)
	var raw, push, repush, attested, noSBOM time.Duration
	var pairs []float64     // each iteration's attested/push
	var sbomPairs []float64 // each iteration's push/(push --no-sbom)
	var rss float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		raw += rawUpload(b, client, fmt.Sprintf("%s/raw/r%d", reg.Host, i), files)
		repo := fmt.Sprintf("%s/pushed/r%d/big", reg.Host, i)
		var withKey, without time.Duration
		withAttestation := func() {
			withKey, _ = runMeasured(b, e, bin, "push", "provider", "--quiet", "--key", key, "--attest-key", attestKey, dir, fmt.Sprintf("%s/attested/r%d/big", reg.Host, i))
			attested += withKey
		}
		var bare time.Duration
		withoutSBOM := func() {
			bare, _ = runMeasured(b, e, bin, "push", "provider", "--quiet", "--no-sbom", "--key", key, dir, fmt.Sprintf("%s/nosbom/r%d/big", reg.Host, i))
			noSBOM += bare
		}
		if i%2 == 1 {
			withAttestation()
			withoutSBOM()
		}
		d, r := runMeasured(b, e, bin, "push", "provider", "--quiet", "--key", key, dir, repo)
		push += d
		without = d
		if r > rss {
			rss = r
		}
		d, _ = runMeasured(b, e, bin, "push", "provider", "--quiet", "--key", key, dir, repo)
		repush += d
		if i%2 == 0 {
			withAttestation()
			withoutSBOM()
		}
		pairs = append(pairs, withKey.Seconds()/without.Seconds())
		sbomPairs = append(sbomPairs, without.Seconds()/bare.Seconds())
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(push.Seconds()/n, "push-s")
	b.ReportMetric(raw.Seconds()/n, "raw-upload-s")
	b.ReportMetric(push.Seconds()/raw.Seconds(), "push/raw")
	b.ReportMetric(repush.Seconds()/n, "repush-s")
	b.ReportMetric(repush.Seconds()/push.Seconds(), "repush/push")
	b.ReportMetric(rss, "peak-RSS-MiB")
	b.ReportMetric(attested.Seconds()/n, "attested-push-s")
	b.ReportMetric(attested.Seconds()/push.Seconds(), "attested/push")
	// The median of the pairs resists what one disturbed push does to the
	// ratio of the sums on a shared machine.
	b.ReportMetric(median(pairs), "attested/push-median")
	b.Logf("push %.2f s, with --attest-key %.2f s: attested/push %.3f, median of %d pairs %.3f (goal ≤ 1.10)", push.Seconds()/n, attested.Seconds()/n, attested.Seconds()/push.Seconds(), len(pairs), median(pairs))
	b.ReportMetric(noSBOM.Seconds()/n, "nosbom-push-s")
	b.ReportMetric(push.Seconds()/noSBOM.Seconds(), "sbom/nosbom")
	b.ReportMetric(median(sbomPairs), "sbom/nosbom-median")
	b.Logf("push %.2f s, with --no-sbom %.2f s: sbom/nosbom %.3f, median of %d pairs %.3f (goal ≤ 1.10)", push.Seconds()/n, noSBOM.Seconds()/n, push.Seconds()/noSBOM.Seconds(), len(sbomPairs), median(sbomPairs))
	b.ReportMetric(0, "ns/op")
}

// writeAttestKey writes a fresh ECDSA P-256 key (PKCS #8 PEM), as
// `push provider --attest-key` reads it, and returns its path.
func writeAttestKey(b *testing.B) string {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "attest.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		b.Fatal(err)
	}
	return path
}

// rawUpload is the reference: each file uploaded once, one after the other,
// with no verification, manifests or tags.
func rawUpload(b *testing.B, client *oci.Client, repo string, files []string) time.Duration {
	ref, _ := oci.ParseReference(repo)
	r, err := client.Open(ref)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		st, _ := f.Stat()
		dg, err := digest.FromReader(f)
		if err != nil {
			b.Fatal(err)
		}
		f.Seek(0, 0)
		if err := r.Push(context.Background(), ocispec.Descriptor{MediaType: "application/octet-stream", Digest: dg, Size: st.Size()}, f); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	return time.Since(start)
}
