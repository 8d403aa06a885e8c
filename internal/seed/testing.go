package seed

import (
	"context"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// SignedProvider pushes n versions of a provider into repository name of
// a test registry, signed with the test publisher key, for a test or a
// benchmark (which it fails on error).
func SignedProvider(t testing.TB, reg *testenv.Registry, name string, n int) {
	t.Helper()
	client, err := oci.NewClient(oci.Options{CAFile: reg.CA.CertFile, Username: reg.Username, Password: reg.Password})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := client.Open(oci.Reference{Registry: reg.Host, Repository: name})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := pgp.LoadSigner(testenv.Testdata(t, "keys", "gocrypto-signer-private.asc"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Provider(context.Background(), repo, t.TempDir(), Options{Versions: n, Signer: signer}); err != nil {
		t.Fatal(err)
	}
}
