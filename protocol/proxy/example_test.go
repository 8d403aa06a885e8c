package proxy_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/repotemplate"
	"github.com/oci-tofu/oci-tofu/protocol/proxy"
	"github.com/oci-tofu/oci-tofu/protocol/store"
)

// Serve the providers of an OCI layout through the network mirror
// protocol.
func ExampleNew() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example-proxy-")
	defer os.RemoveAll(dir)
	key, _ := pgp.LoadKeyring("../../testdata/keys/gpg-signer.asc")
	rel, err := release.ReadProvider(ctx, "../../testdata/providers/hello/1.0.0", release.Options{Keys: []*pgp.Keyring{key}})
	if err != nil {
		panic(err)
	}
	client, _ := oci.NewClient(oci.Options{})
	repo, _ := client.Open(oci.Reference{Layout: true, Repository: filepath.Join(dir, "test", "hello")})
	if _, err := rel.Push(ctx, repo, oci.PushOptions{}); err != nil {
		panic(err)
	}

	tpl, _ := repotemplate.ParseProviderTemplate("oci-layout:" + dir + "/${namespace}/${type}")
	srv, err := proxy.New(proxy.Options{Client: client, ProviderMappings: []store.ProviderMapping{{Template: tpl}}})
	if err != nil {
		panic(err)
	}
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, httptest.NewRequest("GET", "/v1/mirror/example.com/test/hello/index.json", nil))
	body, _ := io.ReadAll(w.Result().Body)
	fmt.Print(w.Code, " ", string(body))
	// Output:
	// 200 {"versions":{"1.0.0":{}}}
}
