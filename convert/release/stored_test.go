package release_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oci-tofu/oci-tofu/convert/release"
	"github.com/oci-tofu/oci-tofu/internal/testenv"
	"github.com/oci-tofu/oci-tofu/oci"
)

// Stored provenance is judged as the proxy serves it, byte for byte: an
// armored signature another tool stored is refused, as tofu refuses it.
func TestCheckProvenanceAsServed(t *testing.T) {
	want := map[string]struct{ err, warning string }{
		"good-ed25519":      {},
		"expired-key":       {warning: "expired on 2024-01-02"},
		"sums-comment":      {warning: `"verified checksum"`},
		"armored-signature": {err: "ASCII-armored"},
		"sums-blank-line":   {err: "line 2 is empty"},
		"revoked-key":       {err: "revoked"},
	}
	for _, c := range testenv.SignatureCorpus(t) {
		w, ok := want[c.Name]
		if !ok {
			continue
		}
		read := func(name string) []byte {
			b, err := os.ReadFile(filepath.Join(c.Dir, name))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		files := &oci.ProvenanceFiles{
			SHA256SUMS: oci.NamedBytes{Name: "SHA256SUMS", Data: read("terraform-provider-hello_1.0.0_SHA256SUMS")},
			Signature:  oci.NamedBytes{Name: "SHA256SUMS.sig", Data: read("terraform-provider-hello_1.0.0_SHA256SUMS.sig")},
		}
		key, err := os.ReadFile(c.Key)
		if err != nil {
			t.Fatal(err)
		}
		files.Keys = oci.NamedBytes{Name: "signing-keys.asc", Data: key}
		warnings, err := release.CheckProvenance(files)
		switch {
		case w.err != "" && (err == nil || !strings.Contains(err.Error(), w.err)):
			t.Errorf("%s: want an error containing %q, got %v", c.Name, w.err, err)
		case w.err == "" && err != nil:
			t.Errorf("%s: %v", c.Name, err)
		case w.err == "" && (w.warning == "") != (len(warnings) == 0):
			t.Errorf("%s: warnings %q", c.Name, warnings)
		case w.warning != "" && !strings.Contains(strings.Join(warnings, "\n"), w.warning):
			t.Errorf("%s: warnings %q lack %q", c.Name, warnings, w.warning)
		}
	}
}
