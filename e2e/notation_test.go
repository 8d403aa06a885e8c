package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// serve --require-notation: of two versions in an OCI layout, the one
// signed with notation-go (as `notation sign --oci-layout` signs) is
// served to real tofu and terraform, the other does not exist for them;
// a trust store holding another CA admits neither.
func TestRequireNotation(t *testing.T) {
	root := t.TempDir()
	layout := filepath.Join(root, "test", "hello")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		mustRun(t, "push", "provider", "--quiet", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), testenv.Testdata(t, "providers", "hello", v), "oci-layout:"+layout)
	}
	publisher := testenv.NewNotationSigner(t, "publisher")
	publisher.SignLayout(t, layout, "1.0.0")
	template := "oci-layout:" + root + "/${namespace}/${type}"
	conf := publisher.ConfigDir(t, "*")

	// verify --notation agrees.
	out := mustRun(t, "verify", "--skip-zips", "--notation", conf, "oci-layout:"+layout+":1.0.0")
	wantLine(t, out, "ok", "is signed as notation trust policy "+conf+" requires")
	out, err := run(t, "verify", "--skip-zips", "--notation", conf, "oci-layout:"+layout+":1.1.0")
	if err == nil || !strings.Contains(out, "signature or attestation is missing or does not verify") {
		t.Errorf("verify --notation of an unsigned version: %v\n%s", err, out)
	}
	wantLine(t, out, "error", "notation trust policy "+conf+": notation: no notation signature of sha256:")

	s := startServe(t, "--provider-template", template, "--require-notation", conf)
	code, body := s.get(t, "/v1/mirror/example.com/test/hello/index.json")
	if code != 200 || !strings.Contains(string(body), `"1.0.0"`) || strings.Contains(string(body), "1.1.0") {
		t.Errorf("index.json: %d %s", code, body)
	}
	code, body = s.get(t, "/v1/mirror/example.com/test/hello/1.1.0.json")
	if code != 404 || !strings.Contains(string(body), "no signature satisfying the configured trust policies") || !strings.Contains(string(body), "no notation signature") {
		t.Errorf("1.1.0.json: %d %s", code, body)
	}
	installsOnly(t, s, "~> 1.0", "1.0.0", "1.1.0 is left out: no signature satisfying the configured trust policies")

	other := startServe(t, "--provider-template", template, "--require-notation", testenv.NewNotationSigner(t, "stranger").ConfigDir(t, "*"))
	if code, body := other.get(t, "/v1/mirror/example.com/test/hello/1.0.0.json"); code != 404 {
		t.Errorf("1.0.0.json under another CA: %d %s", code, body)
	}
	// A scope naming the layout (local/<directory name>) applies to it.
	scoped := startServe(t, "--provider-template", template, "--require-notation", publisher.ConfigDir(t, "local/hello"))
	if code, body := scoped.get(t, "/v1/mirror/example.com/test/hello/1.0.0.json"); code != 200 {
		t.Errorf("1.0.0.json with the layout's scope: %d %s", code, body)
	}
	out, err = run(t, "serve", "--check", "--provider-template", template, "--require-notation", t.TempDir())
	if err == nil || !strings.Contains(out, "--require-notation") || !strings.Contains(out, "no notation trust policy") {
		t.Errorf("serve with an empty notation directory: %v\n%s", err, out)
	}
}
