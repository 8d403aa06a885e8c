package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
	"github.com/oci-tofu/oci-tofu/oci/attach"
)

// orasRun runs the real oras CLI (make tools builds it) with an empty
// docker configuration, returning its output.
func orasRun(t *testing.T, args ...string) (string, error) {
	t.Helper()
	return testenv.Run(t, "", testenvEnv(t), testenv.Tool(t, "oras"), args...)
}

func mustOras(t *testing.T, args ...string) string {
	t.Helper()
	out, err := orasRun(t, args...)
	if err != nil {
		t.Fatalf("oras %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// orasCase is one way the oras CLI (or regctl) copies a release pushed
// with --attest-key into the destination registry's
// providers/<ns>/hello:1.0.0, and what the copy must carry.
type orasCase struct {
	ns string
	// layout: the release pushed into an OCI layout is the source.
	layout bool
	// copy runs the copy; from is the source (HOST/REPO:1.0.0, or the
	// layout's DIR:1.0.0), to the destination HOST/providers/<ns>/hello.
	copy func(t *testing.T, from, to string)
	// attested: the copy carries the signature and the attestation.
	attested bool
}

// The real oras CLI between two Distributions over TLS (no referrers
// API: referrers are listed under sha256-<hex>), on a release pushed with
// push provider --attest-key, which writes its signature and attestation
// both as Sigstore bundle referrers of the index and as cosign's
// sha256-<hex>.sig/.att tags. Every copy keeps the index's digest, and
// real tofu installs every copy through oci-tofu serve. The copies that
// follow referrers — `oras cp -r` from the registry and from an OCI
// layout (--from-oci-layout), `oras backup --include-referrers` to a
// directory and to a tar and `oras restore` of it (the air-gapped
// transfer), and `regctl image copy --referrers` from the registry —
// carry the two
// referrers and none of the tags, and that is enough: serve
// --require-attestation serves them and the real cosign verifies the
// attestation on the copy. `oras cp` without -r, `oras restore
// --exclude-referrers` and `regctl image copy --referrers` from the
// layout carry neither: serve --require-attestation leaves the release
// out, and only a proxy without the policy serves it.
func TestOrasCopies(t *testing.T) {
	ctx := context.Background()
	src, dst := testenv.StartRegistry(t), testenv.StartRegistry(t)
	ca := src.CA.CertFile // one test CA for every registry
	key, pub := ecdsaKeyPair(t)
	from := src.Host + "/providers/test/hello:1.0.0"
	pushed := digest.Digest(pushAttested(t, key, src.Host+"/providers/test/hello", "1.0.0"))
	layoutDir := filepath.Join(t.TempDir(), "hello")
	pushedToLayout := digest.Digest(pushAttested(t, key, "oci-layout:"+layoutDir, "1.0.0"))
	backups := t.TempDir()

	// oras talks plain HTTP to localhost unless told otherwise.
	fromTLS := []string{"--from-plain-http=false", "--from-ca-file", ca}
	toTLS := []string{"--to-plain-http=false", "--to-ca-file", ca}
	tls := []string{"--plain-http=false", "--ca-file", ca}
	cp := func(flags ...string) func(t *testing.T, from, to string) {
		return func(t *testing.T, from, to string) {
			args := append([]string{"cp", "--no-tty"}, flags...)
			if !slices.Contains(flags, "--from-oci-layout") {
				args = append(args, fromTLS...)
			}
			mustOras(t, append(append(args, toTLS...), from, to+":1.0.0")...)
		}
	}
	// The air-gapped transfer: a backup of the tag and its referrers
	// (made once below, as a directory and as a tar), restored.
	restore := func(backup string, flags ...string) func(t *testing.T, from, to string) {
		return func(t *testing.T, _, to string) {
			mustOras(t, append(append(append([]string{"restore", "--no-tty", "--input", filepath.Join(backups, backup)}, flags...), tls...), to+":1.0.0")...)
		}
	}
	regctl := func(scheme string) func(t *testing.T, from, to string) {
		return func(t *testing.T, from, to string) {
			testenv.MustRun(t, "", copyEnv(t, src), testenv.Tool(t, "regctl"), "image", "copy", "--referrers", scheme+from, to+":1.0.0")
		}
	}
	copies := []orasCase{
		{ns: "cp", copy: cp()},
		{ns: "cp-r", copy: cp("-r"), attested: true},
		{ns: "layout", layout: true, copy: cp("--from-oci-layout")},
		{ns: "layout-r", layout: true, copy: cp("-r", "--from-oci-layout"), attested: true},
		{ns: "backup-dir", copy: restore("hello"), attested: true},
		{ns: "backup-tar", copy: restore("hello.tar"), attested: true},
		{ns: "restore-exclude", copy: restore("hello.tar", "--exclude-referrers")},
		{ns: "regctl-referrers", copy: regctl(""), attested: true},
		// regctl 0.11 finds a layout's referrers only under the
		// referrers tag schema's sha256-<hex> tag, which push does not
		// write into layouts (oras and cosign read index.json).
		{ns: "layout-regctl", layout: true, copy: regctl("ocidir://")},
	}
	mustOras(t, append([]string{"backup", "--no-tty", "--include-referrers", "--output", filepath.Join(backups, "hello")}, append(tls, from)...)...)
	mustOras(t, append([]string{"backup", "--no-tty", "--include-referrers", "--output", filepath.Join(backups, "hello.tar")}, append(tls, from)...)...)

	for _, c := range copies {
		t.Run(c.ns, func(t *testing.T) {
			source, want := from, pushed
			if c.layout {
				source, want = layoutDir+":1.0.0", pushedToLayout
			}
			repoName := "providers/" + c.ns + "/hello"
			c.copy(t, source, dst.Host+"/"+repoName)
			repo := registryRepo(t, dst, repoName)
			got, err := repo.Resolve(ctx, "1.0.0")
			if err != nil || got.Digest != want {
				t.Fatalf("the copy's 1.0.0 is %s (%v), pushed %s", got.Digest, err, want)
			}
			for _, kind := range []attach.AttachmentKind{attach.CosignSignatures, attach.CosignAttestations} {
				if _, err := repo.Resolve(ctx, attach.AttachmentTag(want, kind)); !oci.IsNotFound(err) {
					t.Errorf("the copy has the tag %s (%v): the test means to show the referrers alone", attach.AttachmentTag(want, kind), err)
				}
			}
			ref := dst.Host + "/" + repoName + "@" + want.String()
			n := bundleReferrers(t, ref)
			out, err := cosignVerifyAttestationType(t, pub, ref, release.ProviderPredicateType)
			switch {
			case c.attested && n != 2:
				t.Errorf("the copy has %d Sigstore bundle referrers, want the signature and the attestation", n)
			case c.attested && err != nil:
				t.Errorf("cosign verify-attestation on the copy: %v\n%s", err, out)
			case !c.attested && n != 0:
				t.Errorf("the copy has %d Sigstore bundle referrers, want none", n)
			case !c.attested && err == nil:
				t.Errorf("cosign verified an attestation on a copy that should have none:\n%s", out)
			}
		})
	}
	if out, err := cosignVerify(t, pub, dst.Host+"/providers/cp-r/"+"hello@"+pushed.String()); err != nil {
		t.Errorf("cosign verify of the signature on the oras cp -r copy: %v\n%s", err, out)
	}

	// One proxy requiring the attestation, one without the policy, both
	// on the destination; real tofu installs every copy through one.
	template := []string{"--provider-template", dst.Host + "/providers/${namespace}/${type}"}
	required := startServe(t, append(template, "--require-attestation", pub)...)
	plain := startServe(t, template...)
	var attested, bare []string
	for _, c := range copies {
		code, body := required.get(t, "/v1/mirror/example.com/"+c.ns+"/hello/1.0.0.json")
		switch {
		case c.attested && code != 200:
			t.Errorf("%s: 1.0.0.json under --require-attestation: %d %s", c.ns, code, body)
		case !c.attested && (code != 404 || !strings.Contains(string(body), notAttestedWords)):
			t.Errorf("%s: 1.0.0.json under --require-attestation: %d %s, want it left out", c.ns, code, body)
		}
		if c.attested {
			attested = append(attested, c.ns)
		} else {
			bare = append(bare, c.ns)
		}
	}
	installsAll(t, required, attested)
	installsAll(t, plain, bare)
}

// installsAll runs real tofu init through s's network mirror with
// example.com/<ns>/hello 1.0.0 required for each namespace, and requires
// each to be installed.
func installsAll(t *testing.T, s *served, namespaces []string) {
	t.Helper()
	var req strings.Builder
	for i, ns := range namespaces {
		fmt.Fprintf(&req, "    hello%d = {\n      source  = \"example.com/%s/hello\"\n      version = \"1.0.0\"\n    }\n", i, ns)
	}
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": "terraform {\n  required_providers {\n" + req.String() + "  }\n}\n"})
	out := testenv.Tofu(t, networkMirrorConfig(s)).Run(t, dir, "init", "-input=false", "-no-color")
	for _, ns := range namespaces {
		if !strings.Contains(out, "Installed example.com/"+ns+"/hello v1.0.0") {
			t.Errorf("tofu did not install example.com/%s/hello 1.0.0:\n%s", ns, out)
		}
	}
}
