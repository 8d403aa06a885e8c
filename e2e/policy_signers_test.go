package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/sigstoretest"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// Policy signers checked by admission's verifiers, with real tofu and
// terraform: of 1.0.0 and 1.1.0, only 1.0.0 is signed as the rule
// requires, so each client installs 1.0.0 and is told why 1.1.0 is left
// out — a Notary Project signature under the trust policy notation:DIR
// names (1.1.0 unsigned), and a keyless Sigstore attestation by the
// identity keyless:ISSUER=IDENTITY names, checked against the file's
// trusted_root (1.1.0 attested by another identity of the same issuer).
// Both files name their directory and trusted root relative to the
// policy file.
func TestPolicyNotationAndKeylessSigners(t *testing.T) {
	t.Run("notation", func(t *testing.T) {
		root := t.TempDir()
		layout := filepath.Join(root, "test", "hello")
		for _, v := range []string{"1.0.0", "1.1.0"} {
			mustRun(t, "push", "provider", "--quiet", "--key", testenv.Testdata(t, "keys", "gpg-signer.asc"), testenv.Testdata(t, "providers", "hello", v), "oci-layout:"+layout)
		}
		publisher := testenv.NewNotationSigner(t, "publisher")
		publisher.SignLayout(t, layout, "1.0.0")
		conf := publisher.ConfigDir(t, "*")
		spec := "notation:" + filepath.Base(conf)
		file := filepath.Join(filepath.Dir(conf), "policy.hcl")
		writeFile(t, file, `provider "*/*/*" { signers = ["`+spec+`"] }`)
		s := startServe(t, "--provider-template", "oci-layout:"+root+"/${namespace}/${type}", "--policy", file)
		code, body := s.get(t, "/v1/mirror/example.com/test/hello/1.1.0.json")
		if code != 404 || !strings.Contains(string(body), "example.com/test/hello 1.1.0 is not signed by "+spec) || !strings.Contains(string(body), "no notation signature") {
			t.Errorf("1.1.0.json: %d %s", code, body)
		}
		installsOnly(t, s, ">= 1.0", "1.0.0", "1.1.0 is left out: localhost/test/hello 1.1.0 is not signed by "+spec)

		stranger := filepath.Join(filepath.Dir(conf), "stranger.hcl")
		other := testenv.NewNotationSigner(t, "stranger").ConfigDir(t, "*")
		writeFile(t, stranger, `provider "*/*/*" { signers = ["notation:`+other+`"] }`)
		s = startServe(t, "--provider-template", "oci-layout:"+root+"/${namespace}/${type}", "--policy", stranger)
		if code, body := s.get(t, "/v1/mirror/example.com/test/hello/1.0.0.json"); code != 404 {
			t.Errorf("1.0.0.json under another CA's trust store: %d %s", code, body)
		}
	})

	t.Run("keyless", func(t *testing.T) {
		reg := testenv.StartRegistry(t)
		repo := reg.Host + "/keyless/test/hello"
		pushHello(t, repo, "1.0.0", "1.1.0")
		sig := sigstoretest.New(t)
		env := append(testenvEnv(t), "SSL_CERT_FILE="+reg.CA.CertFile)
		for v, identity := range map[string]string{"1.0.0": releaseWorkflow, "1.1.0": forkWorkflow} {
			d := trimSpace(testenv.MustRun(t, "", env, testenv.Tool(t, "crane"), "digest", repo+":"+v))
			attachBundle(t, env, repo+"@"+d, sig.Attest(t, ghIssuer, identity, providerStatement(t, repo, d), sigstoretest.Opts{}))
		}
		spec := "keyless:" + ghIssuer + "=" + releaseWorkflow
		file := factsPolicyFile(t, "trusted_root = \"sigstore/trusted_root.json\"\nprovider \"*/*/*\" { signers = [\""+spec+"\"] }\n",
			map[string]string{"sigstore/trusted_root.json": sig.Root})
		s := startServe(t, "--provider-template", reg.Host+"/keyless/${namespace}/${type}", "--policy", file)
		code, body := s.get(t, "/v1/mirror/example.com/test/hello/1.1.0.json")
		if code != 404 || !strings.Contains(string(body), "is not signed by "+spec) || !strings.Contains(string(body), "expected SAN value") {
			t.Errorf("1.1.0.json (attested by %s): %d %s", forkWorkflow, code, body)
		}
		installsOnly(t, s, ">= 1.0", "1.0.0", "1.1.0 is left out: localhost/test/hello 1.1.0 is not signed by "+spec)

		// Without trusted_root the keyless signer is an error naming it.
		bad := factsPolicyFile(t, "provider \"*/*/*\" {\n  signers = [\""+spec+"\"]\n}\n", nil)
		if out, err := run(t, "policy", "test", "--policy", bad, "tofu"); err == nil || !strings.Contains(out, bad+":2:13: ") || !strings.Contains(out, `top-level trusted_root = "FILE"`) {
			t.Errorf("a keyless signer without trusted_root: %v\n%s", err, out)
		}
	})
}

// cosign: signers accept what the real cosign v3 signs in both of its
// ways — a Sigstore bundle referrer (its default) and the .sig tag
// schema — and refuse another key's signature stored the same way; the
// real cosign verify agrees on each release.
func TestPolicyCosignSignerBothFormats(t *testing.T) {
	reg := testenv.StartRegistry(t)
	key, pub := cosignKeyPair(t)
	otherKey, _ := cosignKeyPair(t)
	for mode, args := range cosignModes(t) {
		t.Run(mode, func(t *testing.T) {
			path := "cosign-" + mode + "/test/hello"
			repo := reg.Host + "/" + path
			pushHello(t, repo, "1.0.0", "1.1.0")
			for v, k := range map[string]string{"1.0.0": key, "1.1.0": otherKey} {
				desc, err := registryRepo(t, reg, path).Resolve(context.Background(), v)
				if err != nil {
					t.Fatal(err)
				}
				ref := repo + "@" + desc.Digest.String()
				if out, err := cosign(t, append(append([]string{"sign", "--key", k, "--yes"}, args...), ref)...); err != nil {
					t.Fatalf("cosign sign: %v\n%s", err, out)
				}
				out, err := cosignVerify(t, pub, ref)
				if (err == nil) != (v == "1.0.0") {
					t.Errorf("cosign verify --key cosign.pub of %s (signed in the %s format): %v\n%s", v, mode, err, out)
				}
			}
			file := factsPolicyFile(t, `provider "*/*/*" { signers = ["cosign:cosign.pub"] }`, map[string]string{"cosign.pub": pub})
			s := startServe(t, "--provider-template", reg.Host+"/cosign-"+mode+"/${namespace}/${type}", "--policy", file)
			installsOnly(t, s, ">= 1.0", "1.0.0", "1.1.0 is left out: localhost/test/hello 1.1.0 is not signed by cosign:cosign.pub")
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A binary built without notation-go and sigstore-go (-tags
// nonotation,nokeyless) refuses a policy naming notation: or keyless:
// signers when it loads it, naming the build tag and the line and column
// — never serving as though the signer were met — and still reads a
// policy without them.
func TestPolicyVerifiedSignersInSmallBuilds(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "oci-tofu-small")
	testenv.MustBuild(t, testenv.Root(t), nil, "go", "build", "-tags", "nonotation,nokeyless", "-o", bin, "./cmd/oci-tofu")
	dir := t.TempDir()
	for _, c := range []struct{ src, want string }{
		{"provider \"*/*/*\" {\n  signers = [\"notation:conf\"]\n}\n", `:2:13: signers: "notation:conf": this oci-tofu was built without Notation support (-tags nonotation)`},
		{"trusted_root = \"root.json\"\nmodule \"*/*/*/*\" {\n  signers = [\"keyless:https://issuer.example=ci\"]\n}\n", `:3:13: signers: "keyless:https://issuer.example=ci": this oci-tofu is built without keyless verification (build tag nokeyless)`},
	} {
		file := filepath.Join(dir, "policy.hcl")
		writeFile(t, file, c.src)
		out, err := testenv.Run(t, "", nil, bin, "policy", "test", "--policy", file, "tofu")
		if err == nil || !strings.Contains(out, file+c.want) {
			t.Errorf("policy test with %q: %v\n%s", c.src, err, out)
		}
		out, err = testenv.Run(t, dir, nil, bin, "serve", "--check", "--self-signed", "--tofu-repository", "oci-layout:"+dir, "--policy", file)
		if err == nil || !strings.Contains(out, c.want) {
			t.Errorf("serve --check with %q: %v\n%s", c.src, err, out)
		}
	}
	writeFile(t, filepath.Join(dir, "policy.hcl"), `tofu { deny = ["1.9.0"] }`)
	if out, err := testenv.Run(t, "", nil, bin, "policy", "test", "--policy", filepath.Join(dir, "policy.hcl"), "tofu@1.9.0"); err != nil || !strings.Contains(out, "deny ") {
		t.Errorf("a policy without such signers: %v\n%s", err, out)
	}
}
