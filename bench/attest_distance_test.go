package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// BenchmarkAttestDistance measures what --attest-key adds to a push where
// round trips, not CPU, set the pace: the registry (Distribution v3) is
// 40 ms away (a delay front), the release 9 platforms of 1 MiB. Each
// iteration pushes it to fresh repositories with and without the key, in
// alternating order; reported: the median of the differences, in
// milliseconds and in round trips, and the requests each push sends
// (counted from the registry's access log). On a loaded machine this
// resolves what BenchmarkProviderPush's loopback ratio cannot: the attest
// step is a chain of round trips and settling waits.
func BenchmarkAttestDistance(b *testing.B) {
	bin := buildOCITofu(b)
	reg := testenv.StartRegistryWithAccessLog(b)
	far := testenv.StartDelayFront(b, "127.0.0.1"+reg.Host[strings.LastIndex(reg.Host, ":"):], distanceOneWay)
	e := env(b)
	dir, key := smallSignedRelease(b)
	attestKey := writeAttestKey(b)
	requests := func(f func()) int {
		before := len(reg.AccessLog())
		f()
		return len(reg.AccessLog()) - before
	}
	var diffs []float64
	var plainReqs, attestedReqs int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var plain, attested time.Duration
		pushPlain := func() {
			plainReqs = requests(func() {
				plain, _ = runMeasured(b, e, bin, "push", "provider", "--quiet", "--key", key, dir, fmt.Sprintf("%s/plain/r%d/small", far.Host, i))
			})
		}
		pushAttested := func() {
			attestedReqs = requests(func() {
				attested, _ = runMeasured(b, e, bin, "push", "provider", "--quiet", "--key", key, "--attest-key", attestKey, dir, fmt.Sprintf("%s/attested/r%d/small", far.Host, i))
			})
		}
		if i%2 == 0 {
			pushPlain()
			pushAttested()
		} else {
			pushAttested()
			pushPlain()
		}
		diffs = append(diffs, (attested - plain).Seconds())
	}
	b.StopTimer()
	rtt := 2 * distanceOneWay.Seconds()
	b.ReportMetric(median(diffs)*1000, "attest-step-ms")
	b.ReportMetric(median(diffs)/rtt, "attest-step/rtt")
	b.ReportMetric(float64(plainReqs), "push-requests")
	b.ReportMetric(float64(attestedReqs), "attested-push-requests")
	b.Logf("40 ms away: --attest-key adds %.0f ms, %.1f round trips (median of %d); requests %d → %d", median(diffs)*1000, median(diffs)/rtt, len(diffs), plainReqs, attestedReqs)
	b.ReportMetric(0, "ns/op")
}

// smallSignedRelease writes a release of 9 platforms of 1 MiB zips with
// SHA256SUMS and its signature, and returns its directory and the
// publisher's public key file.
func smallSignedRelease(b *testing.B) (dir, key string) {
	dir = b.TempDir()
	sums := sha256sums.Sums{}
	for _, p := range benchPlatforms {
		name := fmt.Sprintf("terraform-provider-small_1.0.0_%s.zip", p)
		path := filepath.Join(dir, name)
		writeRandomZip(b, path, "terraform-provider-small_v1.0.0", 1<<20)
		f, _ := os.Open(path)
		sum, _, _ := pkghash.SHA256(f)
		f.Close()
		sums[name] = sum
	}
	os.WriteFile(filepath.Join(dir, "terraform-provider-small_1.0.0_SHA256SUMS"), sums.Bytes(), 0o644)
	signer, err := pgp.LoadSigner(testenv.Testdata(b, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		b.Fatal(err)
	}
	sig, _ := signer.Sign(sums.Bytes(), time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC))
	os.WriteFile(filepath.Join(dir, "terraform-provider-small_1.0.0_SHA256SUMS.sig"), sig, 0o644)
	return dir, testenv.Testdata(b, "keys", "gocrypto-signer.asc")
}
