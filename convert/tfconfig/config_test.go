package tfconfig_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/tfconfig"
)

func TestRequiredProviders(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.tf"), []byte(`terraform { required_providers { x = { source = 5 } } }`), 0o644)
	if _, err := tfconfig.RequiredProviders(dir); err == nil {
		t.Error("a non-string source was accepted")
	}
}
