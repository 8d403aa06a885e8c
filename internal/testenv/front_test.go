package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
)

// A plain front forwards the client's Host, so Distribution's upload URLs
// come back through the front: a push and pull through it never reach the
// registry any other way, and the access log counts each request.
func TestFrontForwardsHost(t *testing.T) {
	reg := StartRegistry(t)
	f := StartFrontFor(t, reg, FrontOptions{})
	repo := orasRepo(t, f.Host, "test/host", Credential{})
	layer := pushArtifact(t, repo, "1.0.0", []byte("through the front"))
	assertPulls(t, repo, "1.0.0", layer)
	if n := f.Count(func(e AccessEntry) bool {
		return e.Method == http.MethodPut && strings.Contains(e.Path, "/blobs/uploads/")
	}); n != 2 {
		t.Errorf("%d blob upload PUTs through the front, want 2 (config, layer):\n%s", n, dumpLog(f))
	}
	forwarded := int64(f.Count(func(e AccessEntry) bool { return e.Action == "forwarded" }))
	if forwarded == 0 || f.UpstreamRequests() != forwarded {
		t.Errorf("%d requests forwarded, %d upstream", forwarded, f.UpstreamRequests())
	}
	// crane pushes and lists through the front as well.
	env := toolEnv(t)
	MustRun(t, "", env, Tool(t, "crane"), "tag", f.Host+"/test/host:1.0.0", "1.0.1")
	if out := MustRun(t, "", env, Tool(t, "crane"), "ls", f.Host+"/test/host"); strings.Fields(out)[1] != "1.0.1" {
		t.Errorf("crane ls: %q", out)
	}
}

// Latency is added to every request.
func TestFrontLatency(t *testing.T) {
	reg := StartRegistry(t)
	f := StartFrontFor(t, reg, FrontOptions{Latency: 150 * time.Millisecond})
	client := NewCA(t).HTTPClient()
	get(t, client, f.URL+"/v2/") // connection set up
	start := time.Now()
	if code, _ := get(t, client, f.URL+"/v2/"); code != http.StatusOK {
		t.Fatalf("/v2/: %d", code)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("request took %v, want at least the 150ms latency", d)
	}
}

// Rounds count sequential round trips: requests sent together share a
// round, a request sent after an answer has the next one.
func TestFrontRounds(t *testing.T) {
	reg := StartRegistry(t)
	f := StartFrontFor(t, reg, FrontOptions{Latency: 100 * time.Millisecond})
	client := NewCA(t).HTTPClient()
	get(t, client, f.URL+"/v2/")
	f.ResetLog()
	get(t, client, f.URL+"/v2/") // round 1
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ { // round 2, all four
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, err := client.Get(f.URL + "/v2/"); err == nil { // failures show in the rounds
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	get(t, client, f.URL+"/v2/") // round 3
	rounds := map[int]int{}
	for _, e := range f.Log() {
		rounds[e.Round]++
	}
	if f.Rounds() != 3 || rounds[1] != 1 || rounds[2] != 4 || rounds[3] != 1 {
		t.Fatalf("rounds %v (highest %d), want 1 in round 1, 4 in round 2, 1 in round 3", rounds, f.Rounds())
	}
}

// Tag lists come in pages of TagPageSize with opaque cursors: oras-go and
// regctl follow the Link headers and see every tag; a client that builds
// last=<tag> is refused; a paging-loop fault links a page to itself.
// (crane is left out: it refuses https Link URLs from a registry it names
// by a loopback address, which it talks to as http.)
func TestFrontPaging(t *testing.T) {
	reg := StartRegistry(t)
	f := StartFrontFor(t, reg, FrontOptions{TagPageSize: 100})
	direct := orasRepo(t, reg.Host, "test/many", Credential{})
	pushArtifact(t, direct, "1.0.0", []byte("many tags"))
	manifest, err := direct.Resolve(context.Background(), "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	want := append(numberedTags(249), "1.0.0")
	pushTags(t, direct, manifest, want[:249])
	slices.Sort(want)

	tags := listTags(t, orasRepo(t, f.Host, "test/many", Credential{}))
	if !slices.Equal(tags, want) {
		t.Errorf("oras-go listed %d tags through the front, want %d", len(tags), len(want))
	}
	if n := f.Count(func(e AccessEntry) bool { return e.Action == "paged" }); n != 3 {
		t.Errorf("%d paged requests for 250 tags at 100, want 3:\n%s", n, dumpLog(f))
	}
	env := toolEnv(t)
	for _, tool := range [][]string{{"regctl", "tag", "ls"}} {
		out := MustRun(t, "", env, Tool(t, tool[0]), append(tool[1:], f.Host+"/test/many")...)
		got := strings.Fields(out)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s listed %d tags, want %d", tool[0], len(got), len(want))
		}
	}

	client := NewCA(t).HTTPClient()
	first := getPage(t, client, f.URL+"/v2/test/many/tags/list")
	if len(first.tags) != 100 || first.next == "" || strings.Contains(first.next, first.tags[99]) {
		t.Fatalf("first page: %d tags, next %q (the cursor must not be the last tag)", len(first.tags), first.next)
	}
	if code, body := get(t, client, f.URL+"/v2/test/many/tags/list?n=100&last="+first.tags[99]); code != http.StatusBadRequest {
		t.Errorf("a self-made cursor: %d %s, want 400", code, body)
	}
	small := getPage(t, client, f.URL+"/v2/test/many/tags/list?n=7")
	if len(small.tags) != 7 || !strings.Contains(small.next, "n=7") {
		t.Errorf("n=7: %d tags, next %q", len(small.tags), small.next)
	}

	f.SetFaults(FaultRule{Match: MatchTagList, Fault: Fault{PagingLoop: true}})
	loop := getPage(t, client, f.URL+"/v2/test/many/tags/list")
	again := getPage(t, client, f.URL+loop.next)
	if !slices.Equal(loop.tags, again.tags) || again.next == "" {
		t.Errorf("a paging loop's next page differs: %v… then %v…", loop.tags[:2], again.tags[:2])
	}
}

// Blob downloads are redirected to another origin that serves the blob
// from the registry and records what it receives. Like presigned storage,
// it refuses requests that carry an Authorization header.
func TestFrontRedirects(t *testing.T) {
	reg := StartRegistry(t)
	layer := pushArtifact(t, orasRepo(t, reg.Host, "test/blob", Credential{}), "1.0.0", []byte("redirected blob"))
	for _, mode := range []struct {
		name   string
		mode   RedirectMode
		prefix string
	}{
		{"other-port", RedirectOtherPort, "https://localhost:"},
		{"plain-http", RedirectPlainHTTP, "http://localhost:"},
		{"other-host", RedirectOtherHost, "https://127.0.0.1:"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			f := StartFrontFor(t, reg, FrontOptions{Redirect: mode.mode})
			if !strings.HasPrefix(f.Redirects.URL, mode.prefix) {
				t.Fatalf("redirect target %s, want %s…", f.Redirects.URL, mode.prefix)
			}
			// oras-go (anonymous) follows the redirect and verifies the digest.
			assertPulls(t, orasRepo(t, f.Host, "test/blob", Credential{}), "1.0.0", layer)
			if len(f.Redirects.Requests()) != 1 {
				t.Fatalf("redirect target got %d requests, want 1", len(f.Redirects.Requests()))
			}
			// A raw client: the 307, then what the target records and answers.
			noFollow := NewCA(t).HTTPClient()
			noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
			resp := do(t, noFollow, http.MethodGet, f.URL+"/v2/test/blob/blobs/"+layer.Digest.String(), nil)
			location := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusTemporaryRedirect || !strings.HasPrefix(location, f.Redirects.URL+"/") {
				t.Fatalf("blob GET: %d Location %q", resp.StatusCode, location)
			}
			resp = do(t, noFollow, http.MethodGet, location, http.Header{"X-Probe": {"1"}, "Authorization": {"Bearer leaked"}})
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("storage accepted a request with Authorization: %d", resp.StatusCode)
			}
			leaks := f.Redirects.WithAuthorization()
			if len(leaks) != 1 || leaks[0].Header.Get("X-Probe") != "1" || leaks[0].Header.Get("Authorization") != "Bearer leaked" {
				t.Errorf("recorded leaks %+v", leaks)
			}
			resp = do(t, noFollow, http.MethodGet, location, nil)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || digest.FromBytes(body) != layer.Digest {
				t.Errorf("storage answered %d with %q", resp.StatusCode, body)
			}
			if code, _ := get(t, noFollow, strings.Replace(location, "X-Signature=", "X-Signature=x", 1)); code != http.StatusForbidden {
				t.Errorf("a forged signature: %d, want 403", code)
			}
		})
	}
}

// DenyMissing hides repositories that do not exist behind 403 (or 401)
// DENIED, like GHCR, from clients that may only pull; a client with a push
// token gets the registry's own 404s, so pushes create repositories.
func TestFrontDenyMissing(t *testing.T) {
	reg := StartTokenRegistry(t, "carol", "carol-pw")
	f := StartFrontFor(t, reg, FrontOptions{DenyMissing: http.StatusForbidden})
	layer := pushArtifact(t, orasRepo(t, f.Host, "org/exists", reg.Credential()), "1.0.0", []byte("exists"))
	cred := Credential{Host: f.Host, Username: reg.Username, Password: reg.Password}
	assertPulls(t, orasRepo(t, f.Host, "org/exists", cred), "1.0.0", layer)
	if _, _, err := orasRepo(t, f.Host, "org/exists", cred).FetchReference(context.Background(), "9.9.9"); !errors.Is(err, errdef.ErrNotFound) {
		t.Errorf("a missing tag in an existing repository: %v, want 404", err)
	}
	_, _, err := orasRepo(t, f.Host, "org/missing", cred).FetchReference(context.Background(), "1.0.0")
	if !isStatus(err, http.StatusForbidden) || !hasCode(err, "DENIED") {
		t.Errorf("a missing repository: %v, want 403 DENIED", err)
	}
	if _, err := orasRepo(t, f.Host, "org/missing", cred).Resolve(context.Background(), "1.0.0"); !isStatus(err, http.StatusForbidden) {
		t.Errorf("HEAD in a missing repository: %v, want 403", err)
	}
	err = orasRepo(t, f.Host, "org/missing", cred).Tags(context.Background(), "", func([]string) error { return nil })
	if !isStatus(err, http.StatusForbidden) {
		t.Errorf("listing a missing repository: %v, want 403", err)
	}
	if n := f.Count(func(e AccessEntry) bool { return e.Action == "denied" && e.Status == http.StatusForbidden }); n < 2 {
		t.Errorf("%d denials logged:\n%s", n, dumpLog(f))
	}

	client := NewCA(t).HTTPClient()
	resp := do(t, client, http.MethodGet, f.URL+"/v2/org/new/manifests/1.0.0", http.Header{"Authorization": {"Bearer " + registryToken(t, reg, "org/new", "pull,push")}})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a pusher reading a missing repository: %d, want the registry's 404", resp.StatusCode)
	}

	unauthorized := StartFrontFor(t, reg, FrontOptions{DenyMissing: http.StatusUnauthorized})
	resp = do(t, client, http.MethodGet, unauthorized.URL+"/v2/org/missing/manifests/1.0.0", http.Header{"Authorization": {"Bearer " + registryToken(t, reg, "org/missing", "pull")}})
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer realm=") {
		t.Errorf("401 mode: %d, WWW-Authenticate %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	if errs := errorCodes(t, resp.Body); !slices.Equal(errs, []string{"DENIED"}) {
		t.Errorf("401 mode error codes %v", errs)
	}
}

// 429 with Retry-After, scripted for the first request of each path:
// oras-go waits as told and succeeds; the log shows each 429 and its retry.
func TestFrontTooManyRequests(t *testing.T) {
	reg := StartRegistry(t)
	layer := pushArtifact(t, orasRepo(t, reg.Host, "test/busy", Credential{}), "1.0.0", []byte("busy"))
	f := StartFrontFor(t, reg, FrontOptions{Faults: []FaultRule{{First: 1, PerPath: true, Fault: TooManyRequests(time.Second)}}})
	assertPulls(t, orasRepo(t, f.Host, "test/busy", Credential{}), "1.0.0", layer)
	log := f.Log()
	throttled := map[string]time.Time{}
	for _, e := range log {
		if e.Status == http.StatusTooManyRequests {
			throttled[e.Path] = e.Time
			continue
		}
		if at, ok := throttled[e.Path]; ok && e.Time.Sub(at) < 900*time.Millisecond {
			t.Errorf("%s retried %v after a 429 with Retry-After: 1", e.Path, e.Time.Sub(at))
		}
	}
	if len(throttled) < 2 {
		t.Errorf("only %d paths throttled:\n%s", len(throttled), dumpLog(f))
	}
	client := NewCA(t).HTTPClient()
	resp := do(t, client, http.MethodGet, f.URL+"/v2/never/asked/tags/list", nil)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("a new path: %d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if errs := errorCodes(t, resp.Body); !slices.Equal(errs, []string{"TOOMANYREQUESTS"}) {
		t.Errorf("429 error codes %v", errs)
	}
	// Every third request instead.
	f.SetFaults(FaultRule{Every: 3, Fault: TooManyRequests(time.Second)})
	var codes []int
	for range 6 {
		code, _ := get(t, client, f.URL+"/v2/")
		codes = append(codes, code)
	}
	if !slices.Equal(codes, []int{200, 200, 429, 200, 200, 429}) {
		t.Errorf("every third: %v", codes)
	}
}

// Scripted faults: answers, hangs until the client leaves, truncated,
// garbled and corrupted bodies; oras-go notices each.
func TestFrontFaults(t *testing.T) {
	reg := StartRegistry(t)
	layer := pushArtifact(t, orasRepo(t, reg.Host, "test/faults", Credential{}), "1.0.0", bytes.Repeat([]byte("0123456789"), 1000))
	f := StartFrontFor(t, reg, FrontOptions{})
	repo := orasRepo(t, f.Host, "test/faults", Credential{})
	ctx := context.Background()

	f.SetFaults(FaultRule{Match: MatchManifests, Fault: ErrorAnswer(http.StatusNotFound, "MANIFEST_UNKNOWN", "scripted")})
	if _, err := repo.Resolve(ctx, "1.0.0"); !errors.Is(err, errdef.ErrNotFound) {
		t.Errorf("scripted 404: %v", err)
	}

	for _, c := range []struct {
		name  string
		fault Fault
		want  func(error) bool
	}{
		{"truncate", Fault{Truncate: true, TruncateAfter: 100}, func(err error) bool { return err != nil }},
		{"garbage", Fault{Garbage: true}, func(err error) bool { return errors.Is(err, content.ErrMismatchedDigest) }},
		{"flip", Fault{FlipByte: true}, func(err error) bool { return errors.Is(err, content.ErrMismatchedDigest) }},
	} {
		f.SetFaults(FaultRule{Match: MatchBlobGET, Fault: c.fault})
		_, err := content.FetchAll(ctx, repo, layer)
		if !c.want(err) {
			t.Errorf("%s: fetch returned %v", c.name, err)
		}
	}
	f.SetFaults()
	if b, err := content.FetchAll(ctx, repo, layer); err != nil || digest.FromBytes(b) != layer.Digest {
		t.Errorf("without faults: %v", err)
	}

	f.SetFaults(FaultRule{Match: MatchBlobGET, Fault: Fault{Hang: HangUntilClientLeaves}})
	client := NewCA(t).HTTPClient()
	client.Timeout = 300 * time.Millisecond
	start := time.Now()
	if _, err := client.Get(f.URL + "/v2/test/faults/blobs/" + layer.Digest.String()); err == nil {
		t.Error("a hanging request answered")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the client waited %v", d)
	}
	waitFor(t, func() bool {
		return f.Count(func(e AccessEntry) bool { return e.Action == "hung" }) == 1
	})

	f.SetFaults(FaultRule{Match: MatchBlobGET, First: 1, Fault: Fault{Hang: 200 * time.Millisecond}})
	start = time.Now()
	if _, err := content.FetchAll(ctx, repo, layer); err != nil || time.Since(start) < 200*time.Millisecond {
		t.Errorf("a 200ms hang, then the blob: %v after %v", err, time.Since(start))
	}
}

// The TCP delay front adds its delay each way: a TLS round trip to the
// registry through it costs at least two round trips (handshake, request);
// the static file reference costs the same distance.
func TestDelayFront(t *testing.T) {
	reg := StartRegistry(t)
	const oneWay = 40 * time.Millisecond
	d := StartDelayFront(t, reg.Host, oneWay)
	client := NewCA(t).HTTPClient()
	start := time.Now()
	if code, _ := get(t, client, "https://"+d.Host+"/v2/"); code != http.StatusOK {
		t.Fatalf("/v2/ through the delay front: %d", code)
	}
	if rtt := time.Since(start); rtt < 4*oneWay {
		t.Errorf("connect+TLS+request took %v, want at least %v", rtt, 4*oneWay)
	}
	start = time.Now()
	get(t, client, "https://"+d.Host+"/v2/")
	// The upper bound is loose (a loaded machine): it catches a delay
	// added many times over, not a slow scheduler.
	if rtt := time.Since(start); rtt < 2*oneWay || rtt > 2*oneWay+5*time.Second {
		t.Errorf("a request on an open connection took %v, want about %v", rtt, 2*oneWay)
	}
	// A bigger transfer passes intact, through oras-go.
	data := bytes.Repeat([]byte("distance"), 256<<10)
	layer := pushArtifact(t, orasRepo(t, d.Host, "test/far", Credential{}), "1.0.0", data)
	assertPulls(t, orasRepo(t, d.Host, "test/far", Credential{}), "1.0.0", layer)

	file := t.TempDir() + "/ref.bin"
	writeFile(t, file, data)
	url := d.ServeFile(t, file)
	start = time.Now()
	code, body := get(t, NewCA(t).HTTPClient(), url)
	if code != http.StatusOK || !bytes.Equal(body, data) {
		t.Fatalf("reference file: %d, %d bytes", code, len(body))
	}
	if rtt := time.Since(start); rtt < 4*oneWay {
		t.Errorf("the reference file took %v, want at least %v", rtt, 4*oneWay)
	}
}

// page is one page of a tag list and its next link.
type page struct {
	tags []string
	next string
}

func getPage(t testing.TB, client *http.Client, url string) page {
	t.Helper()
	resp := do(t, client, http.MethodGet, url, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d", url, resp.StatusCode)
	}
	tags, err := readTagList(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{tags: tags, next: nextLink(resp.Header.Get("Link"))}
}

// do sends a request with extra headers; the body is closed at test end.
func do(t testing.TB, client *http.Client, method, url string, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func get(t testing.TB, client *http.Client, url string) (int, []byte) {
	t.Helper()
	resp := do(t, client, http.MethodGet, url, nil)
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, b
}

// errorCodes reads the codes of a Distribution-style error document.
func errorCodes(t testing.TB, body io.Reader) []string {
	t.Helper()
	var doc struct {
		Errors []struct {
			Code string `json:"code"`
		} `json:"errors"`
	}
	if err := json.NewDecoder(io.LimitReader(body, 1<<20)).Decode(&doc); err != nil {
		t.Fatalf("not an error document: %v", err)
	}
	var codes []string
	for _, e := range doc.Errors {
		codes = append(codes, e.Code)
	}
	return codes
}

// registryToken gets a token for actions (e.g. "pull,push") on repository
// name from the registry's token server, as a client would.
func registryToken(t testing.TB, reg *Registry, name, actions string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, reg.Token.URL+"?service="+reg.Token.Service+"&scope=repository:"+name+":"+actions, nil)
	req.SetBasicAuth(reg.Username, reg.Password)
	resp, err := NewCA(t).HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.Token == "" {
		t.Fatalf("token: %v", err)
	}
	return tok.Token
}

func dumpLog(f *Front) string {
	var b strings.Builder
	for _, e := range f.Log() {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}

func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
