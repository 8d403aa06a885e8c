//go:build linux

package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/x509"
	"debug/elf"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"golang.org/x/crypto/x509roots/fallback/bundle"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// The inputs of the test's image builds: the same inputs must give the
// same digests.
const (
	imageTag       = "e2e"
	imageVersion   = "e2e-test"
	imageRevision  = "0123456789abcdef0123456789abcdef01234567"
	imageEpoch     = 1700000000 // SOURCE_DATE_EPOCH
	imagePlatforms = "linux/amd64,linux/arm64"
	imageSource    = "https://github.com/oci-tofu/oci-tofu"
	// imageCABundle is where the image keeps its CA bundle, as Debian does.
	imageCABundle = "/etc/ssl/certs/ca-certificates.crt"
	// hostCABundle is the build machine's own (Debian) bundle, which the
	// image must not copy.
	hostCABundle = "/etc/ssl/certs/ca-certificates.crt"
)

// The proxy's container image, built by tools/image without a container
// engine, read back through its OCI layout (and by regctl), unpacked, and
// run as a container runtime would run it: the chrooted binary pushes a
// signed release to a registry, serves it, and real tofu installs the
// provider through it; then again as the Helm chart's Deployment runs it.
func TestImage(t *testing.T) {
	requireRoot(t)
	builder := newImageBuilder(t)
	layout := builder.build(t, nil)
	checkLayoutIndex(t, layout)
	img := readLayoutImage(t, layout, imageTag, runtime.GOARCH)

	t.Run("Config", func(t *testing.T) { checkImageConfig(t, img) })
	t.Run("Reproducible", func(t *testing.T) { compareLayouts(t, layout, builder.build(t, nil)) })

	root := t.TempDir()
	headers := unpackLayers(t, img, root)
	t.Run("Layers", func(t *testing.T) { checkLayerHeaders(t, headers) })
	t.Run("RootFS", func(t *testing.T) { checkRootFS(t, root, img.Config.Config) })
	t.Run("Regctl", func(t *testing.T) { checkWithRegctl(t, layout, img, root) })
	t.Run("Push", func(t *testing.T) { checkPush(t, builder, layout, img.Root.Digest) })
	t.Run("Serve", func(t *testing.T) { serveFromImage(t, container{Root: root, Config: img.Config.Config}) })
	t.Run("Chart", func(t *testing.T) { serveWithChart(t, container{Root: root, Config: img.Config.Config}) }) // chart_image_test.go
}

// imageBuilder runs tools/image, compiled once per test.
type imageBuilder struct{ tool string }

func newImageBuilder(t *testing.T) imageBuilder {
	t.Helper()
	tool := filepath.Join(t.TempDir(), "image")
	testenv.MustBuild(t, testenv.Root(t), os.Environ(), "go", "build", "-o", tool, "./tools/image")
	return imageBuilder{tool: tool}
}

// build writes the image with the test's fixed inputs into a new layout
// directory and returns it; env and args are added (for --push).
func (b imageBuilder) build(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "image")
	all := append([]string{"--out", out, "--tag", imageTag, "--version", imageVersion,
		"--revision", imageRevision, "--platform", imagePlatforms}, args...)
	env = append(append(os.Environ(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", imageEpoch)), env...)
	testenv.MustBuild(t, testenv.Root(t), env, b.tool, all...)
	return out
}

// checkLayoutIndex checks the layout's own files: index.json names only
// the tagged image index, which other tools take as the image.
func checkLayoutIndex(t *testing.T, layout string) {
	t.Helper()
	var marker ocispec.ImageLayout
	readJSONFile(t, filepath.Join(layout, ocispec.ImageLayoutFile), &marker)
	if marker.Version != ocispec.ImageLayoutVersion {
		t.Errorf("oci-layout version %q", marker.Version)
	}
	var index ocispec.Index
	readJSONFile(t, filepath.Join(layout, ocispec.ImageIndexFile), &index)
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json names %d manifests, want only the tagged root: %+v", len(index.Manifests), index.Manifests)
	}
	root := index.Manifests[0]
	if root.MediaType != ocispec.MediaTypeImageIndex || root.Annotations[ocispec.AnnotationRefName] != imageTag {
		t.Errorf("index.json's manifest is %s tagged %q, want an image index tagged %q", root.MediaType, root.Annotations[ocispec.AnnotationRefName], imageTag)
	}
}

// checkImageConfig checks what a runtime reads: user, entry point,
// environment, port, platform, and the provenance labels and annotations.
func checkImageConfig(t *testing.T, img *ociImage) {
	c := img.Config.Config
	if c.User != "65532:65532" {
		t.Errorf("User %q, want 65532:65532", c.User)
	}
	if uid, gid := numericUser(t, c.User); uid == 0 || gid == 0 {
		t.Errorf("the image runs as root (%s)", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/oci-tofu"}) || !slices.Equal(c.Cmd, []string{"serve"}) {
		t.Errorf("Entrypoint %q Cmd %q", c.Entrypoint, c.Cmd)
	}
	env := envMap(c.Env)
	if env["SSL_CERT_FILE"] != imageCABundle || !strings.Contains(env["PATH"], "/usr/local/bin") {
		t.Errorf("Env %q lacks PATH or SSL_CERT_FILE=%s", c.Env, imageCABundle)
	}
	if _, ok := c.ExposedPorts["8443/tcp"]; !ok {
		t.Errorf("ExposedPorts %v lack 8443/tcp", c.ExposedPorts)
	}
	if img.Config.OS != "linux" || img.Config.Architecture != runtime.GOARCH {
		t.Errorf("config platform %s/%s", img.Config.OS, img.Config.Architecture)
	}
	created := time.Unix(imageEpoch, 0).UTC()
	if img.Config.Created == nil || !img.Config.Created.Equal(created) {
		t.Errorf("created %v, want SOURCE_DATE_EPOCH %v", img.Config.Created, created)
	}
	want := map[string]string{
		ocispec.AnnotationSource:   imageSource,
		ocispec.AnnotationVersion:  imageVersion,
		ocispec.AnnotationRevision: imageRevision,
		ocispec.AnnotationCreated:  created.Format(time.RFC3339),
	}
	for name, labels := range map[string]map[string]string{"config labels": c.Labels, "manifest annotations": img.Manifest.Annotations, "index annotations": img.Index.Annotations} {
		for k, v := range want {
			if labels[k] != v {
				t.Errorf("%s: %s = %q, want %q", name, k, labels[k], v)
			}
		}
	}
	var archs []string
	for _, m := range img.Index.Manifests {
		archs = append(archs, m.Platform.OS+"/"+m.Platform.Architecture)
	}
	if strings.Join(archs, ",") != imagePlatforms {
		t.Errorf("index platforms %v, want %s", archs, imagePlatforms)
	}
}

// compareLayouts checks that two builds wrote the same files, and that
// every blob is stored under its own digest.
func compareLayouts(t *testing.T, a, b string) {
	t.Helper()
	first, second := layoutFiles(t, a), layoutFiles(t, b)
	for name, d := range first {
		if again, ok := second[name]; !ok {
			t.Errorf("%s: only in the first of two builds of the same inputs", name)
		} else if again != d {
			t.Errorf("%s differs between two builds of the same inputs: %s, then %s", name, d, again)
		}
	}
	for name := range second {
		if _, ok := first[name]; !ok {
			t.Errorf("%s: only in the second of two builds of the same inputs", name)
		}
	}
}

// layoutFiles maps each file of a layout to the digest of its content,
// failing when a blob's content does not match its name.
func layoutFiles(t *testing.T, layout string) map[string]digest.Digest {
	t.Helper()
	files := map[string]digest.Digest{}
	err := filepath.WalkDir(layout, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		dg, err := digest.Canonical.FromReader(io.LimitReader(f, maxLayerSize))
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(layout, p)
		if dir, hex := filepath.Split(rel); dir == "blobs/sha256/" && hex != dg.Encoded() {
			t.Errorf("blob %s holds content of digest %s", rel, dg)
		}
		files[filepath.ToSlash(rel)] = dg
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checkLayerHeaders checks the tar entries are reproducible: sorted, each
// after its parent directory, the mtime SOURCE_DATE_EPOCH, numeric owners
// only, root everywhere but the non-root user's home.
func checkLayerHeaders(t *testing.T, layers [][]*tar.Header) {
	dirs := map[string]bool{".": true}
	for i, headers := range layers {
		for j, h := range headers {
			name := strings.TrimSuffix(h.Name, "/")
			if j > 0 && headers[j-1].Name >= h.Name {
				t.Errorf("layer %d: %s comes after %s", i, h.Name, headers[j-1].Name)
			}
			if !dirs[path.Dir(name)] {
				t.Errorf("layer %d: %s comes before its parent directory", i, h.Name)
			}
			if h.Typeflag == tar.TypeDir {
				dirs[name] = true
			}
			if h.ModTime.Unix() != imageEpoch {
				t.Errorf("layer %d: %s has mtime %v", i, h.Name, h.ModTime)
			}
			if h.Uname != "" || h.Gname != "" {
				t.Errorf("layer %d: %s names its owner %s:%s", i, h.Name, h.Uname, h.Gname)
			}
			wantOwner := 0
			if name == "home/nonroot" {
				wantOwner = 65532
			}
			if h.Uid != wantOwner || h.Gid != wantOwner {
				t.Errorf("layer %d: %s is owned by %d:%d, want %d", i, h.Name, h.Uid, h.Gid, wantOwner)
			}
		}
	}
}

// checkRootFS checks the unpacked root filesystem: a static binary for
// this machine, the image's user in /etc/passwd and /etc/group with its
// home, the Debian CA bundle where SSL_CERT_FILE points, a sticky /tmp.
func checkRootFS(t *testing.T, root string, c ocispec.ImageConfig) {
	if len(c.Entrypoint) > 0 {
		binary := filepath.Join(root, c.Entrypoint[0])
		checkStaticBinary(t, binary)
		checkOwnerMode(t, binary, 0, 0o755)
	}
	uid, gid := numericUser(t, c.User)
	home := accountHome(t, root, uid, gid)
	checkOwnerMode(t, filepath.Join(root, home), int(uid), fs.ModeDir|0o700)
	checkCABundle(t, filepath.Join(root, envMap(c.Env)["SSL_CERT_FILE"]))
	checkOwnerMode(t, filepath.Join(root, "tmp"), 0, fs.ModeDir|fs.ModeSticky|0o777)
}

// checkStaticBinary fails for a binary that needs a dynamic loader or
// shared libraries (the image has neither) or is for another machine.
func checkStaticBinary(t *testing.T, p string) {
	t.Helper()
	f, err := elf.Open(p)
	if err != nil {
		t.Fatalf("entry point: %v", err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[runtime.GOARCH]
	if f.Machine != want {
		t.Errorf("%s is for %s, this machine is %s", p, f.Machine, want)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked: it needs a program interpreter", p)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v (%v)", p, libs, err)
	}
}

// accountHome finds uid in the image's /etc/passwd with gid as its
// primary group, gid in /etc/group, and returns the user's home.
func accountHome(t *testing.T, root string, uid, gid uint32) string {
	t.Helper()
	var home string
	for _, fields := range colonFile(t, filepath.Join(root, "etc/passwd"), 7) {
		if fields[2] == fmt.Sprint(uid) && fields[3] == fmt.Sprint(gid) {
			home = fields[5]
		}
	}
	if home == "" {
		t.Fatalf("/etc/passwd has no user %d with group %d", uid, gid)
	}
	found := false
	for _, fields := range colonFile(t, filepath.Join(root, "etc/group"), 4) {
		found = found || fields[2] == fmt.Sprint(gid)
	}
	if !found {
		t.Errorf("/etc/group has no group %d", gid)
	}
	return home
}

// colonFile reads a passwd-style file as lines of n colon-separated fields.
func colonFile(t *testing.T, p string, n int) [][]string {
	t.Helper()
	var lines [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(readBoundedFile(t, p))), "\n") {
		fields := strings.Split(line, ":")
		if len(fields) != n {
			t.Fatalf("%s: line %q has %d fields, want %d", p, line, len(fields), n)
		}
		lines = append(lines, fields)
	}
	return lines
}

// checkCABundle checks that the image's trust store is the Mozilla bundle
// pinned in go.mod (golang.org/x/crypto/x509roots/fallback, the roots
// without constraints a PEM file cannot carry), in its order, and nothing
// else: no CA the build machine added to its own trust store.
func checkCABundle(t *testing.T, p string) {
	t.Helper()
	var want [][]byte
	for root := range bundle.Roots() {
		if root.Constraint == nil {
			want = append(want, root.Certificate)
		}
	}
	var got [][]byte
	for rest := readBoundedFile(t, p); ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			t.Errorf("%s: a block is not a certificate: %v", p, err)
		}
		got = append(got, block.Bytes)
	}
	if len(want) < 100 || !slices.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("%s holds %d certificates, not the %d of the pinned Mozilla bundle", p, len(got), len(want))
	}
	if host := hostOnlyCertificates(t, want); len(host) > 0 {
		t.Logf("the build machine trusts %d CAs the pinned bundle lacks (such as %s); the image leaves them out", len(host), host[0])
	}
	checkOwnerMode(t, p, 0, 0o644)
}

// hostOnlyCertificates are the subjects of the certificates the build
// machine's bundle holds beyond the pinned ones (its locally added CAs).
func hostOnlyCertificates(t *testing.T, pinned [][]byte) []string {
	t.Helper()
	b, err := os.ReadFile(hostCABundle)
	if err != nil {
		return nil
	}
	var extra []string
	for rest := b; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return extra
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil && !slices.ContainsFunc(pinned, func(d []byte) bool { return bytes.Equal(d, block.Bytes) }) {
			extra = append(extra, c.Subject.String())
		}
	}
}

// checkOwnerMode checks a file's owner (user and group) and mode.
func checkOwnerMode(t *testing.T, p string, owner int, mode fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Errorf("%v", err)
		return
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != owner || int(st.Gid) != owner || fi.Mode() != mode {
		t.Errorf("%s: owner %d:%d mode %v, want %d:%d %v", p, st.Uid, st.Gid, fi.Mode(), owner, owner, mode)
	}
}

// checkWithRegctl reads the layout with regctl, a third-party client: the
// same root digest, the same config, the same /etc/passwd.
func checkWithRegctl(t *testing.T, layout string, img *ociImage, root string) {
	regctl := testenv.Tool(t, "regctl")
	env := testenvEnv(t)
	ref := "ocidir://" + layout + ":" + imageTag
	platform := "linux/" + runtime.GOARCH
	if got := trimSpace(testenv.MustRun(t, "", env, regctl, "image", "digest", ref)); got != img.Root.Digest.String() {
		t.Errorf("regctl: digest %s, layout %s", got, img.Root.Digest)
	}
	var config ocispec.Image
	out := testenv.MustRun(t, "", env, regctl, "image", "inspect", "--platform", platform, "--format", "{{json .}}", ref)
	if err := json.Unmarshal([]byte(out), &config); err != nil {
		t.Fatalf("regctl image inspect: %v\n%s", err, out)
	}
	if config.Config.User != img.Config.Config.User || !slices.Equal(config.Config.Entrypoint, img.Config.Config.Entrypoint) {
		t.Errorf("regctl reads user %q entry point %q", config.Config.User, config.Config.Entrypoint)
	}
	passwd := testenv.MustRun(t, "", env, regctl, "image", "get-file", "--platform", platform, ref, "/etc/passwd")
	if passwd != string(readBoundedFile(t, filepath.Join(root, "etc/passwd"))) {
		t.Errorf("regctl extracts /etc/passwd as %q", passwd)
	}
}

// checkPush pushes the image with tools/image --push --attest-key (oras-go,
// docker config credentials) and copies the layout with regctl, as
// docs/guide-image.md says to publish it: both keep the layout's digest, and
// cosign verifies the pushed image's signature and attestations.
func checkPush(t *testing.T, builder imageBuilder, layout string, want digest.Digest) {
	reg := testenv.StartRegistry(t)
	// The build keeps this process's HOME (its Go caches); the push gets
	// an empty docker configuration and trusts the test registry's CA.
	key, pub := ecdsaKeyPair(t)
	builder.build(t, []string{"DOCKER_CONFIG=" + t.TempDir(), "SSL_CERT_FILE=" + reg.CA.CertFile}, "--push", reg.Host+"/tools/oci-tofu", "--attest-key", key)
	env := append(testenvEnv(t), "SSL_CERT_FILE="+reg.CA.CertFile)
	regctlRef := reg.Host + "/regctl/oci-tofu:" + imageTag
	testenv.MustRun(t, "", env, testenv.Tool(t, "regctl"), "image", "copy", "ocidir://"+layout+":"+imageTag, regctlRef)
	crane := testenv.Tool(t, "crane")
	for _, ref := range []string{reg.Host + "/tools/oci-tofu:" + imageTag, regctlRef} {
		if got := trimSpace(testenv.MustRun(t, "", env, crane, "digest", ref)); got != want.String() {
			t.Errorf("%s: digest %s, layout %s", ref, got, want)
		}
	}
	checkImageAttested(t, pub, reg.Host+"/tools/oci-tofu:"+imageTag, want) // image_attest_test.go
	arm := trimSpace(testenv.MustRun(t, "", env, crane, "digest", "--platform", "linux/arm64", reg.Host+"/tools/oci-tofu:"+imageTag))
	if !strings.HasPrefix(arm, "sha256:") {
		t.Errorf("no linux/arm64 image in the pushed index: %s", arm)
	}
}

// serveFromImage runs the unpacked image: the chrooted binary pushes a
// signed release to the test registry (`docker run IMAGE push provider
// …`), then serves it with the image's default command configured through
// the environment (`docker run -e OCI_TOFU_… IMAGE`), as the image's
// user; real tofu installs the provider through that proxy.
func serveFromImage(t *testing.T, c container) {
	reg := testenv.StartRegistry(t)
	mountIntoContainer(t, c.Root)
	trustTestCA := []string{"OCI_TOFU_CA_FILE=/tls/ca.pem"}

	if out := c.run(t, nil, "--version"); !strings.Contains(out, imageVersion) {
		t.Errorf("the image's binary says %q, want version %s", out, imageVersion)
	}
	c.run(t, trustTestCA, "push", "provider", "--quiet", "--key", "/fixtures/gpg-signer.asc",
		"/fixtures/hello/1.0.0", reg.Host+"/providers/test/hello")

	port := testenv.FreePort(t)
	cmd := c.command(t, context.Background(), append(trustTestCA,
		fmt.Sprintf("OCI_TOFU_LISTEN=127.0.0.1:%d", port),
		"OCI_TOFU_TLS_CERT=/tls/tls.crt", "OCI_TOFU_TLS_KEY=/tls/tls.key",
		"OCI_TOFU_PROVIDER_TEMPLATE="+reg.Host+"/providers/${namespace}/${type}",
		"OCI_TOFU_SHUTDOWN_TIMEOUT=10s"))
	s := launchServe(t, cmd, port)

	uids, gids, groups := processIDs(t, cmd.Process.Pid)
	if uids != "65532 65532 65532 65532" || gids != "65532 65532 65532 65532" || groups != "" {
		t.Errorf("the proxy runs with uids %q gids %q groups %q, want 65532 only", uids, gids, groups)
	}
	code, body := s.get(t, "/v1/mirror/example.com/test/hello/index.json")
	if code != 200 || !strings.Contains(string(body), `"1.0.0"`) {
		t.Fatalf("network mirror index.json: %d %s", code, body)
	}
	tofu := testenv.Tofu(t, networkMirrorConfig(s))
	dir := testenv.WriteConfig(t, map[string]string{"main.tf": fmt.Sprintf(helloConfig, "1.0.0")})
	if out := tofu.Run(t, dir, "init", "-input=false", "-no-color"); !strings.Contains(out, "Installed example.com/test/hello v1.0.0") {
		t.Errorf("tofu init through the image's proxy:\n%s", out)
	}
}

// mountIntoContainer copies into the root filesystem what a runtime would
// mount: /etc/hosts, the TLS secret (server certificate and key, and the
// CA of the test registry) at /tls, and a volume with a signed provider
// release at /fixtures. Secret files are 0644, Kubernetes' default mode.
func mountIntoContainer(t *testing.T, root string) {
	t.Helper()
	ca := testenv.NewCA(t)
	write := func(rel string, data []byte) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/hosts", []byte("127.0.0.1 localhost\n::1 localhost\n"))
	write("tls/ca.pem", readBoundedFile(t, ca.CertFile))
	write("tls/tls.crt", readBoundedFile(t, ca.ServerCertFile))
	write("tls/tls.key", readBoundedFile(t, ca.ServerKeyFile))
	write("fixtures/gpg-signer.asc", readBoundedFile(t, testenv.Testdata(t, "keys", "gpg-signer.asc")))
	if err := os.CopyFS(filepath.Join(root, "fixtures/hello/1.0.0"), os.DirFS(testenv.Testdata(t, "providers", "hello", "1.0.0"))); err != nil {
		t.Fatal(err)
	}
}

// envMap maps an environment's names to values.
func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// readBoundedFile reads a small file (at most 16 MiB).
func readBoundedFile(t *testing.T, p string) []byte {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 16<<20+1))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 16<<20 {
		t.Fatalf("%s is larger than 16 MiB", p)
	}
	return b
}

func readJSONFile(t *testing.T, p string, v any) {
	t.Helper()
	if err := json.Unmarshal(readBoundedFile(t, p), v); err != nil {
		t.Fatalf("%s: %v", p, err)
	}
}
