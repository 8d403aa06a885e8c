//go:build walk

package main

// The walk of docs/architecture.md ("The path of a push"): the test
// builds the CLI and, with WALK=1, pushes a signed
// provider release into an OCI layout, else only asks the same command
// for its help, so that tools/walk can count the files and functions the
// push alone enters (the coverage blocks it adds). Built only with -tags
// walk: without coverage it measures nothing.

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestWalkPushProvider: push provider of a signed release, SBOMs made,
// into a fresh OCI layout.
func TestWalkPushProvider(t *testing.T) {
	layout := "oci-layout:" + filepath.Join(t.TempDir(), "hello")
	var out bytes.Buffer
	app := newApp()
	app.Writer, app.ErrWriter = &out, &out
	args := []string{"oci-tofu", "push", "provider", "--help"}
	if os.Getenv("WALK") == "1" {
		args = []string{"oci-tofu", "push", "provider", "--key", "../../testdata/keys/gpg-signer.asc", "../../testdata/providers/hello/1.0.0", layout}
	}
	if err := app.Run(args); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
}
