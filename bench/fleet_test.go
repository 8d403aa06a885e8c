package bench

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// BenchmarkFleet counts the origin downloads per archive when 30 clients
// install a provider the registry does not hold yet, at once, through
// three `oci-tofu serve` replicas behind nginx: with --shared-cache on
// Redis (goal: 1, one pull for the whole fleet) and, as the reference in
// the same run, without it (each replica pulling on its own: up to 3).
// 3 of the 30 are real `tofu init`s, the others HTTP clients reading the
// network mirror's <version>.json and every archive it lists (checked
// against its zh: hash). Each iteration uses a provider neither side has
// pulled; the origin stands in for a remote registry (30 ms before each
// answer, 16 MiB/s per connection), 4 platforms of 4 MiB.
func BenchmarkFleet(b *testing.B) {
	bin := buildOCITofu(b)
	reg := testenv.StartRegistry(b)
	redis := testenv.StartRedis(b)
	key := testenv.Testdata(b, "keys", "gocrypto-signer.asc")
	platforms := sixPlatforms[:4]
	var releases []testenv.OriginRelease
	for i := 0; i < 2*b.N; i++ {
		typ := fmt.Sprintf("fl%d", i)
		dir := filepath.Join(b.TempDir(), typ)
		writeRelease(b, dir, typ, 4<<20, platforms)
		releases = append(releases, testenv.OriginRelease{Namespace: "acme", Type: typ, Dir: dir, Key: key})
	}
	origin := testenv.StartOriginWith(b, releases, testenv.OriginOptions{Latency: 30 * time.Millisecond, BytesPerSecond: 16 << 20})
	args := func(prefix string) []string {
		return []string{"--provider-template", reg.Host + "/" + prefix + "/${hostname}/${namespace}/${type}",
			"--pull-through-origin", "example.com=" + origin.ProvidersURL(), "--log-level", "warn"}
	}
	shared := testenv.StartFleet(b, bin, 3, nil, append(args("fleet-shared"), "--shared-cache", redis.URL())...)
	alone := testenv.StartFleet(b, bin, 3, nil, args("fleet-alone")...)
	var withRedis, without []float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for side, f := range map[string]*testenv.Fleet{"shared": shared, "alone": alone} {
			typ := releases[2*i].Type
			if side == "alone" {
				typ = releases[2*i+1].Type
			}
			fleetInstalls(b, f, "example.com/acme/"+typ, 30, 3)
			waitStored(b, reg, "fleet-"+side+"/example.com/acme/"+typ)
			n := origin.Count(func(p string) bool {
				return strings.Contains(p, "/files/acme/"+typ+"/") && strings.HasSuffix(p, ".zip")
			})
			perArchive := float64(n) / float64(len(platforms))
			if side == "shared" {
				withRedis = append(withRedis, perArchive)
			} else {
				without = append(without, perArchive)
			}
		}
	}
	b.StopTimer()
	b.Logf("origin downloads per archive, 30 concurrent first installs over 3 replicas: with Redis %v, each replica alone %v", withRedis, without)
	b.ReportMetric(maxOf(withRedis), "downloads/archive-redis")
	b.ReportMetric(maxOf(without), "downloads/archive-alone")
	b.ReportMetric(0, "ns/op")
}

// fleetInstalls runs n concurrent first installs of provider addr 1.0.0
// through the fleet: tofus real `tofu init`s, the rest HTTP clients.
func fleetInstalls(b *testing.B, f *testenv.Fleet, addr string, n, tofus int) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		if i < tofus {
			tofu := testenv.Tofu(b, fmt.Sprintf("provider_installation {\n  network_mirror {\n    url = %q\n  }\n}\n", f.URL+"/v1/mirror/"))
			cfg := fmt.Sprintf("terraform {\n  required_providers {\n    p = { source = %q, version = \"1.0.0\" }\n  }\n}\n", addr)
			dir := testenv.WriteConfig(b, map[string]string{"main.tf": cfg})
			go func() {
				defer wg.Done()
				<-start
				if out, err := tofu.Try(b, dir, "init", "-input=false", "-no-color"); err != nil {
					errs <- fmt.Errorf("tofu init: %v\n%s", err, out)
				}
			}()
			continue
		}
		go func() {
			defer wg.Done()
			<-start
			if err := fetchVersion(f.Client, f.URL+"/v1/mirror/"+addr+"/1.0.0.json"); err != nil {
				errs <- err
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// fetchVersion reads a <version>.json and downloads every archive it
// lists, each checked against its zh: hash.
func fetchVersion(c *http.Client, doc string) error {
	resp, err := c.Get(doc)
	if err != nil {
		return err
	}
	var v struct {
		Archives map[string]struct {
			URL    string   `json:"url"`
			Hashes []string `json:"hashes"`
		} `json:"archives"`
	}
	err = json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		return fmt.Errorf("%s: %d %v", doc, resp.StatusCode, err)
	}
	base, _ := url.Parse(doc)
	for _, a := range v.Archives {
		u, _ := base.Parse(a.URL)
		resp, err := c.Get(u.String())
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || len(a.Hashes) == 0 || "zh:"+hex.EncodeToString(h.Sum(nil)) != a.Hashes[0] {
			return fmt.Errorf("%s: status %d, %v, or a wrong sha256", u, resp.StatusCode, err)
		}
	}
	return nil
}
