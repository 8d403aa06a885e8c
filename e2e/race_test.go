package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// 5. Check-then-act on tags: two pushes of different builds of one version
// never both succeed when they overlap; the tag ends up holding the build
// of a push that reported success, and the other reports the race naming
// both digests.
func TestConcurrentPushesOfOneVersion(t *testing.T) {
	reg := testenv.StartRegistry(t)
	build := func(extra string) (dir string, zipHex string) {
		entries := append(fixtureEntries(t, "1.0.0", "linux_amd64"), testenv.ZipEntry{Name: "BUILD", Data: []byte(extra)})
		dir, zip := releaseDirWith(t, entries...)
		return dir, digest.FromBytes(zip).Encoded()
	}
	a, _ := build("a")
	b, bZip := build("b")

	// The loser is held back: B's first look at its zip waits two
	// seconds, long after both pushes saw the tag missing and after A
	// wrote it (A's tag write itself waits half a second, so B's first
	// look at the tag comes before it).
	t.Run("overlapping", func(t *testing.T) {
		holdB := func(r *http.Request) bool {
			return r.Method == http.MethodHead && strings.HasSuffix(r.URL.Path, "/blobs/sha256:"+bZip)
		}
		tagWrite := func(r *http.Request) bool {
			return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/manifests/1.0.0")
		}
		front := testenv.StartFrontFor(t, reg, testenv.FrontOptions{Faults: []testenv.FaultRule{
			{Match: holdB, First: 1, Fault: testenv.Fault{Hang: 2 * time.Second}},
			{Match: tagWrite, First: 1, Fault: testenv.Fault{Hang: 500 * time.Millisecond}},
		}})
		repo := front.Host + "/providers/race/hello"
		results := pushAll(t, repo, a, b)
		ra, rb := results[0], results[1]
		if ra.err != nil || rb.err == nil {
			t.Fatalf("want A to succeed and B to fail:\nA: %v %s\nB: %v %s", ra.err, ra.out, rb.err, rb.out)
		}
		if !strings.Contains(rb.out, "tag moved") || !strings.Contains(rb.out, ra.digest) {
			t.Errorf("B's error does not report the race with A's digest %s:\n%s", ra.digest, rb.out)
		}
		if held := tagDigest(t, reg, "providers/race/hello", "1.0.0"); held != ra.digest {
			t.Errorf("the tag holds %s, A pushed %s", held, ra.digest)
		}
	})

	// Started together, with nothing held back, a few times over: at least
	// one succeeds, the tag holds a successful push's build, and a push
	// that fails says why (the race, or the version taken). Both succeed
	// only when one's write lands later than the other's settling time
	// (oci.Tags): rare here, and logged.
	t.Run("simultaneous", func(t *testing.T) {
		for round := 0; round < 5; round++ {
			repoName := fmt.Sprintf("providers/race%d/hello", round)
			results := pushAll(t, reg.Host+"/"+repoName, a, b)
			var ok []string
			for _, r := range results {
				switch {
				case r.err == nil:
					ok = append(ok, r.digest)
				case !strings.Contains(r.out, "tag moved") && !strings.Contains(r.out, "already holds different content"):
					t.Errorf("round %d: a push failed for another reason: %v\n%s", round, r.err, r.out)
				}
			}
			held := tagDigest(t, reg, repoName, "1.0.0")
			t.Logf("round %d: pushes %v succeeded; the tag holds %s", round, ok, held)
			if len(ok) == 0 || !slices.Contains(ok, held) {
				t.Errorf("round %d: the tag holds %s, the successful pushes wrote %v", round, held, ok)
			}
		}
	})
}

type pushResult struct {
	out    string
	err    error
	digest string
}

// pushAll pushes each release directory to repo at once (--sign-key:
// each build is signed, as CI would) and returns what each said.
func pushAll(t *testing.T, repo string, dirs ...string) []pushResult {
	t.Helper()
	out := make([]pushResult, len(dirs))
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, ociTofu, "push", "provider", "--json", "--sign-key", testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"), dir, repo)
			cmd.Env = append(os.Environ(), "SSL_CERT_FILE="+testenv.NewCA(t).CertFile, "DOCKER_CONFIG="+t.TempDir())
			b, err := cmd.CombinedOutput()
			r := pushResult{out: string(b), err: err}
			var res struct{ Digest string }
			if err == nil && json.Unmarshal(b, &res) == nil {
				r.digest = res.Digest
			} else if d := digestIn(r.out); d != "" {
				r.digest = d
			}
			out[i] = r
		}()
	}
	wg.Wait()
	return out
}

// digestIn is the digest a failed push names as its own: "this push (…)".
func digestIn(out string) string {
	_, rest, ok := strings.Cut(out, "this push (")
	if !ok {
		return ""
	}
	d, _, _ := strings.Cut(rest, ")")
	return d
}
