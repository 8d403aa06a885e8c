package lint_test

import (
	"os"
	"testing"

	"github.com/oci-tofu/oci-tofu/internal/testenv"
)

// TestMain removes the GnuPG corpus some tests make.
func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveSignatureCorpus()
	os.Exit(code)
}
