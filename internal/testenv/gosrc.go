package testenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
