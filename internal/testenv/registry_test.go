package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// Every kind of registry takes a push and gives it back through oras-go,
// over TLS on localhost:PORT, and refuses anonymous clients when it has
// credentials.
func TestRegistries(t *testing.T) {
	for _, k := range AllRegistries() {
		t.Run(k.Kind, func(t *testing.T) {
			reg := k.Start(t)
			if !strings.HasPrefix(reg.Host, "localhost:") {
				t.Errorf("Host %q is not localhost:PORT", reg.Host)
			}
			repo := orasRepo(t, reg.Host, "test/artifact", reg.Credential())
			want := pushArtifact(t, repo, "1.0.0", []byte("hello "+k.Kind))
			assertPulls(t, repo, "1.0.0", want)
			if tags := listTags(t, repo); !slices.Equal(tags, []string{"1.0.0"}) {
				t.Errorf("tags %v", tags)
			}
			if reg.Username != "" {
				anon := orasRepo(t, reg.Host, "test/artifact", Credential{})
				_, err := anon.Resolve(context.Background(), "1.0.0")
				if !isStatus(err, http.StatusUnauthorized) && !errors.Is(err, auth.ErrBasicCredentialNotFound) {
					t.Errorf("anonymous resolve: %v, want 401", err)
				}
				wrong := orasRepo(t, reg.Host, "test/artifact", Credential{Host: reg.Host, Username: reg.Username, Password: "wrong"})
				if _, err := wrong.Resolve(context.Background(), "1.0.0"); !isStatus(err, http.StatusUnauthorized) {
					t.Errorf("resolve with a wrong password: %v, want 401", err)
				}
			}
		})
	}
}

// The token registry's tokens come from our token server, scoped as the
// client asked; crane and regctl log in through it too.
func TestTokenRegistry(t *testing.T) {
	reg := StartTokenRegistry(t, "bob", "bob-pw")
	repo := orasRepo(t, reg.Host, "team/app", reg.Credential())
	pushArtifact(t, repo, "2.0.0", []byte("token-protected"))
	var scopes []string
	for _, r := range reg.Token.Requests() {
		if r.User != "bob" || !r.Granted {
			t.Errorf("unexpected token request %+v", r)
		}
		scopes = append(scopes, r.Scopes...)
	}
	if !slices.Contains(scopes, "repository:team/app:pull,push") && !slices.Contains(scopes, "repository:team/app:push,pull") {
		t.Errorf("no push token for team/app among %v", scopes)
	}
	env := toolEnv(t, reg.Credential())
	if out := MustRun(t, "", env, Tool(t, "crane"), "ls", reg.Host+"/team/app"); strings.TrimSpace(out) != "2.0.0" {
		t.Errorf("crane ls: %q", out)
	}
	if out := MustRun(t, "", env, Tool(t, "regctl"), "tag", "ls", reg.Host+"/team/app"); strings.TrimSpace(out) != "2.0.0" {
		t.Errorf("regctl tag ls: %q", out)
	}
	before := len(reg.Token.Requests())
	wrong := orasRepo(t, reg.Host, "team/app", Credential{Host: reg.Host, Username: "bob", Password: "nope"})
	if _, err := wrong.Resolve(context.Background(), "2.0.0"); err == nil {
		t.Fatal("a wrong password got a token")
	}
	reqs := reg.Token.Requests()
	if len(reqs) <= before || reqs[len(reqs)-1].Granted {
		t.Errorf("the refused token request was not recorded as refused: %+v", reqs[before:])
	}
}

// orasRepo opens a repository with oras-go as oci-tofu does (auth client,
// retries), trusting the test CA, with cred for its host.
func orasRepo(t testing.TB, host, name string, cred Credential) *remote.Repository {
	t.Helper()
	repo, err := remote.NewRepository(host + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	transport := NewCA(t).HTTPClient().Transport.(*http.Transport)
	t.Cleanup(transport.CloseIdleConnections)
	repo.Client = &auth.Client{
		Client:     &http.Client{Transport: retry.NewTransport(transport), Timeout: time.Minute},
		Cache:      auth.NewCache(),
		Credential: auth.StaticCredential(host, auth.Credential{Username: cred.Username, Password: cred.Password}),
	}
	return repo
}

// pushArtifact pushes an artifact with one layer holding data, tagged tag,
// and returns the layer's descriptor. Like oras.Copy it asks for a token
// to pull and push from the start.
func pushArtifact(t testing.TB, repo *remote.Repository, tag string, data []byte) ocispec.Descriptor {
	t.Helper()
	ctx := auth.AppendRepositoryScope(context.Background(), repo.Reference, auth.ActionPull, auth.ActionPush)
	layer, err := oras.PushBytes(ctx, repo, "application/vnd.oci-tofu.test", data)
	if err != nil {
		t.Fatalf("pushing a blob to %s: %v", repo.Reference, err)
	}
	manifest, err := oras.PackManifest(ctx, repo, oras.PackManifestVersion1_1, "application/vnd.oci-tofu.test-artifact", oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}})
	if err != nil {
		t.Fatalf("pushing a manifest to %s: %v", repo.Reference, err)
	}
	if err := repo.Tag(ctx, manifest, tag); err != nil {
		t.Fatalf("tagging %s: %v", repo.Reference, err)
	}
	return layer
}

// assertPulls resolves tag and fetches its only layer, checking it is want.
func assertPulls(t testing.TB, repo *remote.Repository, tag string, want ocispec.Descriptor) {
	t.Helper()
	got, err := pullLayer(repo, tag)
	if err != nil {
		t.Fatalf("pulling %s:%s: %v", repo.Reference, tag, err)
	}
	if digest.FromBytes(got) != want.Digest {
		t.Fatalf("pulled layer %s, want %s", digest.FromBytes(got), want.Digest)
	}
}

// pullLayer resolves tag and fetches the first layer of its manifest,
// digests verified.
func pullLayer(repo *remote.Repository, tag string) ([]byte, error) {
	ctx := context.Background()
	_, b, err := oras.FetchBytes(ctx, repo, tag, oras.DefaultFetchBytesOptions)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if len(m.Layers) == 0 {
		return nil, errors.New("no layers")
	}
	return content.FetchAll(ctx, repo, m.Layers[0])
}

func listTags(t testing.TB, repo *remote.Repository) []string {
	t.Helper()
	var all []string
	if err := repo.Tags(context.Background(), "", func(tags []string) error {
		all = append(all, tags...)
		return nil
	}); err != nil {
		t.Fatalf("listing tags of %s: %v", repo.Reference, err)
	}
	return all
}

// isStatus reports whether err is a registry answer with this status.
func isStatus(err error, status int) bool {
	var resp *errcode.ErrorResponse
	return errors.As(err, &resp) && resp.StatusCode == status
}

// hasCode reports whether err is a registry answer with this error code.
func hasCode(err error, code string) bool {
	var resp *errcode.ErrorResponse
	if !errors.As(err, &resp) {
		return false
	}
	for _, e := range resp.Errors {
		if e.Code == code {
			return true
		}
	}
	return false
}

// toolEnv is an environment for crane and regctl: the test CA, creds in a
// docker config of their own, a home of their own.
func toolEnv(t testing.TB, creds ...Credential) []string {
	t.Helper()
	home := t.TempDir()
	docker := WriteDockerConfig(t, home+"/.docker", creds...)
	return append(os.Environ(), "SSL_CERT_FILE="+NewCA(t).CertFile, "DOCKER_CONFIG="+docker, "HOME="+home)
}

// pushTags tags manifest under each of tags.
func pushTags(t testing.TB, repo *remote.Repository, manifest ocispec.Descriptor, tags []string) {
	t.Helper()
	ctx := auth.AppendRepositoryScope(context.Background(), repo.Reference, auth.ActionPull, auth.ActionPush)
	b, err := content.FetchAll(ctx, repo, manifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range tags {
		if err := repo.PushReference(ctx, manifest, bytes.NewReader(b), tag); err != nil {
			t.Fatalf("tag %s: %v", tag, err)
		}
	}
}

func numberedTags(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("0.%d.0", i+1)
	}
	return out
}

// The token server answers the OAuth2 password grant too, and gives an
// anonymous client a token without access, which the registry refuses.
func TestTokenServerGrants(t *testing.T) {
	reg := StartTokenRegistry(t, "dave", "dave-pw")
	client := NewCA(t).HTTPClient()
	form := url.Values{"grant_type": {"password"}, "username": {"dave"}, "password": {"dave-pw"},
		"service": {reg.Token.Service}, "scope": {"repository:x/y:pull"}}
	resp, err := client.PostForm(reg.Token.URL, form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("password grant: %d", resp.StatusCode)
	}
	form.Set("password", "wrong")
	if resp, err = client.PostForm(reg.Token.URL, form); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("password grant with a wrong password: %d", resp.StatusCode)
	}

	resp, err = client.Get(reg.Token.URL + "?service=" + reg.Token.Service + "&scope=repository:x/y:pull")
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		Token string `json:"token"`
	}
	json.NewDecoder(resp.Body).Decode(&tok)
	resp.Body.Close()
	if tok.Token == "" || tokenGrants("Bearer "+tok.Token, "x/y", "pull") {
		t.Fatalf("anonymous token %q grants pull", tok.Token)
	}
	req, _ := http.NewRequest(http.MethodGet, reg.URL()+"/v2/x/y/tags/list", nil)
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	if resp, err = client.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the registry let an anonymous token list tags: %d", resp.StatusCode)
	}
}

// A registry started with its access log lists what it answered; an alias
// of a repository serves the same content under its own name.
func TestRegistryAccessLogAndAlias(t *testing.T) {
	reg := StartRegistryWithAccessLog(t)
	repo := orasRepo(t, reg.Host, "test/artifact", reg.Credential())
	want := pushArtifact(t, repo, "1.0.0", []byte("hello"))
	reg.AliasRepository(t, "test/artifact", "test/alias")
	alias := orasRepo(t, reg.Host, "test/alias", reg.Credential())
	assertPulls(t, alias, "1.0.0", want)
	var found bool
	for deadline := time.Now().Add(5 * time.Second); !found && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		found = slices.Contains(reg.AccessLog(), "GET /v2/test/alias/manifests/1.0.0 200")
	}
	if !found {
		t.Fatalf("the access log has no GET of the alias's manifest:\n%s", strings.Join(reg.AccessLog(), "\n"))
	}
}
