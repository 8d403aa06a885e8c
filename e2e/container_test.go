//go:build linux

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/content/oci"
)

// Bounds on what the test reads from an image.
const (
	maxManifestSize = 4 << 20
	maxLayerSize    = 256 << 20 // compressed
	maxUnpackedSize = 512 << 20 // all layers, uncompressed
)

// ociImage is one platform's image read from an OCI layout through
// oras-go: the tagged index, the platform's manifest and config, and its
// layers (compressed, digests verified).
type ociImage struct {
	Root     ocispec.Descriptor
	Index    ocispec.Index
	Manifest ocispec.Manifest
	Config   ocispec.Image
	Layers   [][]byte
}

// readLayoutImage reads the image tagged tag from the OCI layout at dir,
// choosing the linux/arch manifest of its index.
func readLayoutImage(t *testing.T, dir, tag, arch string) *ociImage {
	t.Helper()
	ctx := context.Background()
	store, err := oci.NewFromFS(ctx, os.DirFS(dir))
	if err != nil {
		t.Fatalf("reading layout %s: %v", dir, err)
	}
	img := &ociImage{}
	if img.Root, err = store.Resolve(ctx, tag); err != nil {
		t.Fatalf("resolving %s in %s: %v", tag, dir, err)
	}
	if img.Root.MediaType != ocispec.MediaTypeImageIndex {
		t.Fatalf("%s is a %s, not an image index", tag, img.Root.MediaType)
	}
	fetchJSON(t, store, img.Root, &img.Index)
	manifest := platformManifest(t, img.Index, "linux", arch)
	fetchJSON(t, store, manifest, &img.Manifest)
	fetchJSON(t, store, img.Manifest.Config, &img.Config)
	for _, l := range img.Manifest.Layers {
		img.Layers = append(img.Layers, fetchBlob(t, store, l, maxLayerSize))
	}
	return img
}

// platformManifest is the index's manifest for os/arch.
func platformManifest(t *testing.T, index ocispec.Index, goos, arch string) ocispec.Descriptor {
	t.Helper()
	for _, m := range index.Manifests {
		if m.Platform != nil && m.Platform.OS == goos && m.Platform.Architecture == arch {
			return m
		}
	}
	t.Fatalf("the index has no %s/%s manifest: %+v", goos, arch, index.Manifests)
	return ocispec.Descriptor{}
}

// fetchBlob reads a blob of at most limit bytes, checking its size and
// digest against desc.
func fetchBlob(t *testing.T, store content.Fetcher, desc ocispec.Descriptor, limit int64) []byte {
	t.Helper()
	if desc.Size > limit {
		t.Fatalf("%s is %d bytes, more than %d", desc.Digest, desc.Size, limit)
	}
	b, err := content.FetchAll(context.Background(), store, desc)
	if err != nil {
		t.Fatalf("fetching %s: %v", desc.Digest, err)
	}
	return b
}

func fetchJSON(t *testing.T, store content.Fetcher, desc ocispec.Descriptor, v any) {
	t.Helper()
	if err := json.Unmarshal(fetchBlob(t, store, desc, maxManifestSize), v); err != nil {
		t.Fatalf("%s: %v", desc.Digest, err)
	}
}

// unpackLayers extracts the image's layers in order into root, as a
// container runtime prepares a root filesystem: owners and modes
// (including the sticky bit) as the tar headers say. Every layer's
// uncompressed digest must be its diff_id. Only directories and regular
// files are expected (no links, devices or whiteouts). It returns the
// headers, layer by layer.
func unpackLayers(t *testing.T, img *ociImage, root string) [][]*tar.Header {
	t.Helper()
	if len(img.Config.RootFS.DiffIDs) != len(img.Layers) {
		t.Fatalf("config names %d diff_ids for %d layers", len(img.Config.RootFS.DiffIDs), len(img.Layers))
	}
	// The root directory of a container is traversable by every user.
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	budget := int64(maxUnpackedSize)
	var all [][]*tar.Header
	for i, blob := range img.Layers {
		headers, diffID, err := unpackLayer(blob, root, &budget)
		if err != nil {
			t.Fatalf("layer %d (%s): %v", i, img.Manifest.Layers[i].Digest, err)
		}
		if diffID != img.Config.RootFS.DiffIDs[i] {
			t.Errorf("layer %d: uncompressed digest %s, config's diff_id %s", i, diffID, img.Config.RootFS.DiffIDs[i])
		}
		all = append(all, headers)
	}
	return all
}

// unpackLayer extracts one gzip-compressed tar layer into root and returns
// its headers and the digest of the uncompressed tar stream.
func unpackLayer(blob []byte, root string, budget *int64) ([]*tar.Header, digest.Digest, error) {
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		return nil, "", err
	}
	digester := digest.Canonical.Digester()
	stream := io.TeeReader(zr, digester.Hash())
	tr := tar.NewReader(stream)
	var headers []*tar.Header
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "", err
		}
		if *budget -= hdr.Size; *budget < 0 {
			return nil, "", fmt.Errorf("layers unpack to more than %d bytes", maxUnpackedSize)
		}
		if err := extractEntry(tr, hdr, root); err != nil {
			return nil, "", fmt.Errorf("%s: %w", hdr.Name, err)
		}
		headers = append(headers, hdr)
	}
	// Read the tar stream's trailing padding, so the digest covers it all.
	if _, err := io.Copy(io.Discard, io.LimitReader(stream, 1<<20)); err != nil {
		return nil, "", err
	}
	return headers, digester.Digest(), nil
}

// extractEntry writes one directory or regular file below root with its
// owner and mode.
func extractEntry(r io.Reader, hdr *tar.Header, root string) error {
	name := strings.TrimSuffix(hdr.Name, "/")
	if name == "" || path.IsAbs(name) || path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
		return fmt.Errorf("unsafe entry name")
	}
	target := filepath.Join(root, filepath.FromSlash(name))
	mode := hdr.FileInfo().Mode() // includes fs.ModeSticky for c_ISVTX
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(target, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	case tar.TypeReg:
		f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r) // the tar reader stops at hdr.Size
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	default:
		return fmt.Errorf("unexpected entry type %q", hdr.Typeflag)
	}
	if err := os.Lchown(target, hdr.Uid, hdr.Gid); err != nil {
		return err
	}
	return os.Chmod(target, mode&(fs.ModePerm|fs.ModeSticky|fs.ModeSetuid|fs.ModeSetgid))
}

// container runs an unpacked image as a container runtime would, without
// namespaces: chrooted into Root, as the config's User (no supplementary
// groups), in its WorkingDir, with its Env and no variable of the test's
// own, running Entrypoint followed by the given arguments or, when there
// are none, by Cmd. It shares the host's network, so it reaches the test
// registry on loopback; what a runtime would mount (/etc/hosts, secrets,
// volumes) the test copies into Root.
type container struct {
	Root   string
	Config ocispec.ImageConfig
}

// command is the container's process, not started; env is added to the
// image's environment, as `docker run -e` does.
func (c container) command(t *testing.T, ctx context.Context, env []string, args ...string) *exec.Cmd {
	t.Helper()
	argv := slices.Clone(c.Config.Entrypoint)
	if len(args) > 0 {
		argv = append(argv, args...)
	} else {
		argv = append(argv, c.Config.Cmd...)
	}
	if len(argv) == 0 {
		t.Fatal("the image has neither entry point nor command")
	}
	uid, gid := numericUser(t, c.Config.User)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(slices.Clone(c.Config.Env), env...)
	cmd.Dir = c.Config.WorkingDir
	if cmd.Dir == "" {
		cmd.Dir = "/"
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     c.Root,
		Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
		Pdeathsig:  syscall.SIGKILL,
	}
	return cmd
}

// run runs the container to completion (bounded by a minute) and returns
// its combined output; the test fails on a non-zero exit.
func (c container) run(t *testing.T, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := c.command(t, ctx, env, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("container %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// numericUser parses a config's User of the form UID:GID, the form that
// lets runtimes enforce runAsNonRoot without reading the image's files.
func numericUser(t *testing.T, user string) (uint32, uint32) {
	t.Helper()
	u, g, ok := strings.Cut(user, ":")
	uid, uerr := strconv.ParseUint(u, 10, 32)
	gid, gerr := strconv.ParseUint(g, 10, 32)
	if !ok || uerr != nil || gerr != nil {
		t.Fatalf("image user %q is not UID:GID", user)
	}
	return uint32(uid), uint32(gid)
}

// requireRoot fails (it does not skip) when the test cannot chroot and
// change user: running the image as a runtime does needs root.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("this test runs the image chrooted as another user and needs root (uid 0), not uid %d: run it as root, as CI does", os.Geteuid())
	}
}

// processIDs reads the real, effective, saved and filesystem user and
// group IDs and the supplementary groups of a running process.
func processIDs(t *testing.T, pid int) (uids, gids, groups string) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		key, value, _ := strings.Cut(line, ":")
		value = strings.Join(strings.Fields(value), " ")
		switch key {
		case "Uid":
			uids = value
		case "Gid":
			gids = value
		case "Groups":
			groups = value
		}
	}
	return uids, gids, groups
}
