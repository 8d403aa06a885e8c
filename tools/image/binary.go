package main

import (
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// maxBinary bounds the binary read into the layer.
const maxBinary = 256 << 20

// platform is an image platform, "linux/amd64" or "linux/arm64".
type platform struct {
	OS, Arch, Variant string
}

func (p platform) String() string { return p.OS + "/" + p.Arch }

// parsePlatforms parses a comma-separated list of linux platforms.
func parsePlatforms(s string) ([]platform, error) {
	var out []platform
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		p, ok := supportedPlatforms[item]
		if !ok {
			return nil, fmt.Errorf("platform %q: supported are linux/amd64 and linux/arm64", item)
		}
		if seen[item] {
			return nil, fmt.Errorf("platform %q given twice", item)
		}
		seen[item] = true
		out = append(out, p)
	}
	return out, nil
}

// supportedPlatforms are the platforms the image is built for, with the
// variant image indexes conventionally name for arm64.
var supportedPlatforms = map[string]platform{
	"linux/amd64": {OS: "linux", Arch: "amd64"},
	"linux/arm64": {OS: "linux", Arch: "arm64", Variant: "v8"},
}

// elfMachines are the ELF machines of the supported architectures.
var elfMachines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// buildBinary cross-compiles ./cmd/oci-tofu of moduleDir for p into dir
// and returns the binary: static (CGO_ENABLED=0), without paths of the
// build machine (-trimpath) or symbol tables (-s -w), for the baseline
// instruction set of the architecture, so the same source, version and
// Go release give the same bytes.
func buildBinary(ctx context.Context, goCmd, moduleDir, dir string, p platform, version string) ([]byte, error) {
	out := filepath.Join(dir, "oci-tofu-"+p.OS+"-"+p.Arch)
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath",
		"-ldflags", "-s -w -X main.version="+version, "-o", out, "./cmd/oci-tofu")
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch, "GOAMD64=v1", "GOARM64=v8.0")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build for %s: %w", p, err)
	}
	if err := checkStaticELF(out, p.Arch); err != nil {
		return nil, err
	}
	return readBounded(out, maxBinary)
}

// checkStaticELF refuses a binary for another machine, or one that needs a
// dynamic loader or shared libraries: the image has neither.
func checkStaticELF(path, arch string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	if want := elfMachines[arch]; f.Machine != want {
		return fmt.Errorf("%s is built for %s, not %s", path, f.Machine, want)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (it names a program interpreter)", path)
		}
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if len(libs) > 0 {
		return fmt.Errorf("%s needs shared libraries %v", path, libs)
	}
	return nil
}

// readBounded reads a whole file of at most limit bytes.
func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, nil
}
