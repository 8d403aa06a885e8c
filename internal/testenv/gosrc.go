package testenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// DemoProviderSource writes the demo provider's source into dir: a main
// package linking golang.org/x/text v0.3.7 and github.com/google/uuid
// v1.6.0 replaced by v1.5.0 (testdata/gosrc/demo-provider), what the
// SBOM tests build for several platforms (with GOFLAGS=-mod=mod, which
// writes its go.sum from the Go module proxy).
func DemoProviderSource(t testing.TB, dir string) {
	t.Helper()
	for _, name := range []string{"go.mod", "main.go"} {
		b, err := os.ReadFile(Testdata(t, "gosrc", "demo-provider", name))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// GovulnFinding is one finding of `govulncheck -format json`: the entry,
// the version that fixes it, and the frames of its trace.
type GovulnFinding struct {
	OSV          string `json:"osv"`
	FixedVersion string `json:"fixed_version"`
	Trace        []struct {
		Module  string `json:"module"`
		Version string `json:"version"`
	} `json:"trace"`
}

// Govulncheck runs the real govulncheck (make tools) on binary bin at the
// module level against the database in dbDir, and returns its findings.
func Govulncheck(t testing.TB, dbDir, bin string) []GovulnFinding {
	t.Helper()
	cmd := exec.Command(Tool(t, "govulncheck"), "-mode", "binary", "-scan", "module", "-db", "file://"+dbDir, "-format", "json", bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("govulncheck: %v\n%s", err, stderr.String())
	}
	var found []GovulnFinding
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var msg struct {
			Finding *GovulnFinding `json:"finding"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return found
		} else if err != nil {
			t.Fatalf("govulncheck's output: %v", err)
		}
		if msg.Finding != nil {
			found = append(found, *msg.Finding)
		}
	}
}

// GoVersionM is the module list `go version -m` prints for a binary, one
// line each: "mod|dep PATH VERSION SUM", and "=> PATH VERSION SUM" after a
// replaced one.
func GoVersionM(t testing.TB, bin string) []string {
	t.Helper()
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	return ModuleLines(string(out))
}

// ModuleLines are the module lines of build information as `go version
// -m` prints it, or as debug.BuildInfo's String writes it, in
// GoVersionM's form.
func ModuleLines(buildInfo string) []string {
	var mods []string
	for _, line := range strings.Split(buildInfo, "\n") {
		f := strings.Split(strings.TrimPrefix(line, "\t"), "\t")
		switch f[0] {
		case "mod", "dep", "=>":
			for len(f) < 4 {
				f = append(f, "")
			}
			mods = append(mods, strings.Join(f[:4], " "))
		}
	}
	return mods
}

// SyftPackage is one Go package syft catalogued in a binary: its name
// (the module path, or "stdlib"), version, purl and go.sum hash.
type SyftPackage struct {
	Name, Version, PURL, H1 string
}

// Syft runs the real syft (make tools) on file path, offline, and returns
// the Go modules (and the standard library) it catalogued, sorted by purl.
func Syft(t testing.TB, path string) []SyftPackage {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(Tool(t, "syft"), "scan", "file:"+path, "-o", "syft-json", "-q")
	cmd.Env = append(os.Environ(), "SYFT_CHECK_FOR_APP_UPDATE=false", "HOME="+home, "XDG_CACHE_HOME="+home, "XDG_CONFIG_HOME="+home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("syft: %v\n%s", err, stderr.String())
	}
	var doc struct {
		Artifacts []struct {
			Type, Name, Version, PURL string
			Metadata                  struct {
				H1Digest string `json:"h1Digest"`
			}
		}
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatalf("syft's output: %v", err)
	}
	var pkgs []SyftPackage
	for _, a := range doc.Artifacts {
		if a.Type == "go-module" {
			pkgs = append(pkgs, SyftPackage{Name: a.Name, Version: a.Version, PURL: a.PURL, H1: a.Metadata.H1Digest})
		}
	}
	slices.SortFunc(pkgs, func(a, b SyftPackage) int { return strings.Compare(a.PURL, b.PURL) })
	return pkgs
}
