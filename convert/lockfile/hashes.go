package lockfile

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/oci-tofu/oci-tofu/convert/pgp"
	"github.com/oci-tofu/oci-tofu/convert/pkghash"
	"github.com/oci-tofu/oci-tofu/convert/sha256sums"
	"github.com/oci-tofu/oci-tofu/oci"
)

// signedZipHashes returns the zh: hashes OpenTofu records from a signed
// SHA256SUMS when installing through the Provider Registry Protocol: one
// for every line, whatever file it names (the _manifest.json included),
// exactly as getproviders' signatureAuthentication.acceptableHashes reads
// them. A document tofu would not read as a checksums file records
// nothing; a blank line, on which tofu fails, is an error.
func signedZipHashes(doc []byte) ([]string, error) {
	f, err := sha256sums.Read(doc)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, h := range f.Hashes() {
		out = append(out, pkghash.ZH(h))
	}
	return out, nil
}

// publisherSignedSums returns the release's SHA256SUMS when it carries the
// publisher's signature, verified as the proxy verifies it before serving
// it through the registry protocol; nil when the release has none (the
// proxy then signs a SHA256SUMS of the index's zips with its own key).
func publisherSignedSums(prov *oci.Provenance, files *oci.ProvenanceFiles) ([]byte, error) {
	if prov == nil || files == nil || files.SHA256SUMS.Data == nil || files.Signature.Data == nil ||
		files.Keys.Data == nil || len(prov.SigningKeyIDs) == 0 {
		return nil, nil
	}
	kr, err := pgp.ReadKeyring("stored signing keys", files.Keys.Data)
	if err != nil {
		return nil, fmt.Errorf("the provenance stored with the release does not verify: %w", err)
	}
	if _, err := pgp.VerifyDetached(files.SHA256SUMS.Data, files.Signature.Data, []*pgp.Keyring{kr}); err != nil {
		return nil, fmt.Errorf("the provenance stored with the release does not verify: %w", err)
	}
	return files.SHA256SUMS.Data, nil
}

// preferredHashes keeps the hashes of the schemes OpenTofu carries over
// from an earlier lock of the same version (h1: and zh:).
func preferredHashes(hashes []string) []string {
	var out []string
	for _, h := range hashes {
		if strings.HasPrefix(h, "h1:") || strings.HasPrefix(h, "zh:") {
			out = append(out, h)
		}
	}
	return out
}

// hashSet is a concurrency-safe set of hashes.
type hashSet struct {
	mu sync.Mutex
	m  map[string]bool
}

func newHashSet() *hashSet { return &hashSet{m: map[string]bool{}} }

func (h *hashSet) add(hs ...string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, x := range hs {
		h.m[x] = true
	}
}

func (h *hashSet) has(x string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[x]
}

// list returns the hashes sorted, as lock files hold them.
func (h *hashSet) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.m))
	for x := range h.m {
		out = append(out, x)
	}
	sort.Strings(out)
	return out
}
