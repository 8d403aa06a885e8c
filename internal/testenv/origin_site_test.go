package testenv

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The test origins log every request (never credentials), stop and come
// back on the same address, and serve tampered files when told to.
func TestOriginSite(t *testing.T) {
	o := StartOrigin(t, []OriginRelease{{Namespace: "test", Type: "hello", Dir: Testdata(t, "providers", "hello", "1.0.0"), Key: Testdata(t, "keys", "gpg-signer.asc")}})
	client := NewCA(t).HTTPClient()
	get := func(path string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+o.Host+path, nil)
		req.Header.Set("Authorization", "Bearer secret-token")
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	zip := "/files/test/hello/terraform-provider-hello_1.0.0_linux_amd64.zip"
	if code, _, err := get("/v1/providers/test/hello/versions"); err != nil || code != 200 {
		t.Fatalf("versions: %d %v", code, err)
	}
	_, before, _ := get(zip)
	reqs := o.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/v1/providers/test/hello/versions" || reqs[1].Authorization != "Bearer" {
		t.Fatalf("access log: %+v", reqs)
	}
	if o.Count(func(p string) bool { return strings.HasSuffix(p, ".zip") }) != 1 {
		t.Error("count")
	}
	o.ResetLog()
	if len(o.Requests()) != 0 {
		t.Error("reset")
	}

	o.Tamper(t, strings.TrimPrefix(zip, "/"), func(b []byte) []byte { return append(b, 'x') })
	if _, after, _ := get(zip); after != before+"x" {
		t.Error("tampering did not change the file served")
	}

	o.Stop()
	if _, _, err := get(zip); err == nil {
		t.Fatal("a stopped origin answered")
	}
	o.Start(t)
	if code, _, err := get(zip); err != nil || code != 200 {
		t.Fatalf("restarted origin: %d %v", code, err)
	}
}

// A TofuDL origin lists its releases newest first and serves their files.
func TestTofuOrigin(t *testing.T) {
	o := StartTofuOrigin(t, []string{Testdata(t, "tofu", "1.8.0"), Testdata(t, "tofu", "1.9.0")}, OriginOptions{})
	client := NewCA(t).HTTPClient()
	resp, err := client.Get(o.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if i, j := strings.Index(string(b), `"1.9.0"`), strings.Index(string(b), `"1.8.0"`); i < 0 || j < i {
		t.Fatalf("api.json: %s", b)
	}
	u := strings.NewReplacer("{{ .Version }}", "1.9.0", "{{ .Artifact }}", "tofu_1.9.0_SHA256SUMS").Replace(o.DownloadTemplate())
	resp, err = client.Get(u)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%s: %v", u, err)
	}
	resp.Body.Close()
}
