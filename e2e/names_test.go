package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Names that agree: a release of terraform-provider-hello pushed to a
// repository named for another type, or whose archive holds the
// executable of another type, is refused naming both, and nothing is
// tagged: tofu would install it and then fail ("could not find executable
// file starting with terraform-provider-<type>").
func TestPushProviderNamesAgree(t *testing.T) {
	reg := testenv.StartRegistry(t)
	key := testenv.Testdata(t, "keys", "gpg-signer.asc")
	out, err := run(t, "push", "provider", "--key", key, testenv.Testdata(t, "providers", "hello", "1.0.0"), reg.Host+"/providers/acme/gizmos")
	if err == nil || !strings.Contains(out, "serves provider type gizmos") || !strings.Contains(out, "of type hello") {
		t.Fatalf("hello pushed to .../acme/gizmos: %v\n%s", err, out)
	}
	// The repository may name the type after a prefix.
	mustRun(t, "push", "provider", "--key", key, testenv.Testdata(t, "providers", "hello", "1.0.0"), reg.Host+"/providers/acme/terraform-provider-hello")

	entries := fixtureEntries(t, "1.0.0", "linux_amd64")
	for i := range entries {
		entries[i].Name = strings.Replace(entries[i].Name, "terraform-provider-hello", "terraform-provider-gizmos", 1)
	}
	dir, _ := releaseDirWith(t, entries...)
	out, err = run(t, "push", "provider", "--unsigned", dir, reg.Host+"/providers/acme/hello")
	if err == nil || !strings.Contains(out, "holds no executable for type hello") || !strings.Contains(out, "terraform-provider-gizmos_v1.0.0") {
		t.Fatalf("an archive holding terraform-provider-gizmos: %v\n%s", err, out)
	}
	if out, err := run(t, "verify", reg.Host+"/providers/acme/hello"); err == nil {
		t.Fatalf("a refused push left a tag:\n%s", out)
	}

	// Copied under another type by another tool: verify names both types.
	env := append(os.Environ(), "SSL_CERT_FILE="+reg.CA.CertFile, "HOME="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir())
	testenv.MustRun(t, "", env, testenv.Tool(t, "crane"), "copy", reg.Host+"/providers/acme/terraform-provider-hello:1.0.0", reg.Host+"/providers/acme/gizmos:1.0.0")
	out, err = run(t, "verify", reg.Host+"/providers/acme/gizmos:1.0.0")
	if err == nil || !strings.Contains(out, "provider type hello") || !strings.Contains(out, "serves type gizmos") {
		t.Fatalf("verify of hello under .../acme/gizmos: %v\n%s", err, out)
	}
}
